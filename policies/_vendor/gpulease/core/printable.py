"""Text the kit did not write (a program's resource names, an instance's log lines) made safe to print.

A name or a log line may hold control characters (ESC starting a terminal escape sequence, CR rewriting the
line, BEL, NUL) or invisible format characters (the bidirectional marks and overrides U+061C, U+202A-U+202E,
U+2066-U+2069, zero-width and invisible operators U+200B-U+200F, U+2060-U+2064, the deprecated format
characters U+206A-U+206F, the soft hyphen U+00AD, the tag characters U+E0000-U+E007F) or line and paragraph
separators (U+2028, U+2029). Printed raw they would recolour, clear, hide or reorder what a report says. The one
definition of what is unsafe is Unicode's: the general categories ``Cc`` (controls), ``Cf`` (format), ``Zl`` and
``Zp`` (separators). Each is written as a Python-style escape (``\\x1b``, ``\\u202e``, ``\\U000e0041``) or the
caller's shorter name for it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping

UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
REPORT_NAMES: Mapping[str, str] = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
"""How the review's reports write the common controls (the way the findings quote names with ``repr``)."""


def unsafe(char: str) -> bool:
    """Whether printing ``char`` raw could change what the terminal or a rendered page shows."""
    return unicodedata.category(char) in UNSAFE_CATEGORIES


def _shown(char: str, named: Mapping[str, str]) -> str:
    if char in named:
        return named[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def escaped(text: str, named: Mapping[str, str] = REPORT_NAMES, keep: str = "") -> str:
    """``text`` with every unsafe character except those in ``keep`` written out (``named`` first)."""
    if text.isprintable():
        return text  # no control, format or separator character at all (the common case, checked in C)
    return "".join(_shown(c, named) if c not in keep and unsafe(c) else c for c in text)


def printable(text: object) -> str:
    """``text`` as the review's reports print it: ``"a\\x1b[31m"`` shows as ``a\\x1b[31m``, everything safe as it
    is."""
    return escaped(str(text))
