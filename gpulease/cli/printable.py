"""What a command prints of text it did not write (an instance's log lines): control characters made visible, so
that a log cannot move the cursor, clear the screen, retitle the terminal or hide a line behind a carriage return;
and the last lines of each log rather than its first."""

from __future__ import annotations

import re
from collections.abc import Iterable

from gpulease.core.printable import escaped

_NAMED = {"\x1b": "\\e", "\r": "\\r", "\x07": "\\a", "\b": "\\b", "\x0c": "\\f", "\x0b": "\\v", "\x00": "\\0"}
_TAG = re.compile(r"^\[[^\]]*\]")


def printable(text: str) -> str:
    """``text`` with every control or format character except a tab written out (ESC as ``\\e``, CR ``\\r``,
    BEL ``\\a``, others ``\\xNN`` / ``\\uNNNN``: C0 and C1 controls, bidirectional overrides, zero-width marks;
    what is unsafe is ``gpulease.core.printable``'s one definition)."""
    return escaped(text, _NAMED, keep="\t")


def tail(lines: Iterable[str], count: int, *, keep: tuple[str, ...] = ()) -> list[str]:
    """The last ``count`` lines of each source (lines tagged ``[source] ...``, a source's lines one after another),
    with a line saying how many earlier ones are not shown; sources in ``keep`` and ``count`` 0 show everything."""
    out: list[str] = []
    groups: list[tuple[str, list[str]]] = []
    for line in lines:
        found = _TAG.match(line)
        tag = found.group(0) if found else ""
        if groups and groups[-1][0] == tag:
            groups[-1][1].append(line)
        else:
            groups.append((tag, [line]))
    for tag, group in groups:
        if count and tag not in keep and len(group) > count:
            out.append(f"{tag} ... {len(group) - count} earlier lines not shown (--lines 0 shows all)".strip())
            group = group[-count:]
        out += group
    return out
