"""What a command prints of text it did not write (an instance's log lines): control characters made visible, so
that a log cannot move the cursor, clear the screen, retitle the terminal or hide a line behind a carriage
return."""

from __future__ import annotations

from gpulease.core.printable import escaped

_NAMED = {"\x1b": "\\e", "\r": "\\r", "\x07": "\\a", "\b": "\\b", "\x0c": "\\f", "\x0b": "\\v", "\x00": "\\0"}


def printable(text: str) -> str:
    """``text`` with every control or format character except a tab written out (ESC as ``\\e``, CR ``\\r``,
    BEL ``\\a``, others ``\\xNN`` / ``\\uNNNN``: C0 and C1 controls, bidirectional overrides, zero-width marks;
    what is unsafe is ``gpulease.core.printable``'s one definition)."""
    return escaped(text, _NAMED, keep="\t")
