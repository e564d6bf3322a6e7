"""Text from a program (resource names, stack names, messages quoting them) made safe to print on one line.

A name may hold control characters (ESC starting a terminal escape sequence, CR rewriting the line, NUL) or
invisible format characters (the bidirectional overrides U+202A-U+202E, U+2066-U+2069, zero-width U+200B-U+200F).
Printed raw they would recolour, hide or reorder what the report says; every report line shows them as
Python-style escapes instead (``\\x1b``, ``\\r``, ``\\u202e``), the way the findings quote names with ``repr``.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: object) -> str:
    """``text`` with every control and invisible format character escaped (``"a\\x1b[31m"`` shows as
    ``a\\x1b[31m``); everything else as it is."""
    return _UNSAFE.sub(_escape, str(text))
