"""Text the kit did not write (a program's resource names, an instance's log lines) made safe to print.

A name or a log line may hold control characters (ESC starting a terminal escape sequence, CR rewriting the
line, BEL, NUL) or invisible format characters (the bidirectional marks and overrides U+061C, U+202A-U+202E,
U+2066-U+2069, zero-width and invisible operators U+200B-U+200F, U+2060-U+2064, the deprecated format
characters U+206A-U+206F, the soft hyphen U+00AD, the tag characters U+E0000-U+E007F) or line and paragraph
separators (U+2028, U+2029). Printed raw they would recolour, clear, hide or reorder what a report says. What is
unsafe is Unicode's general categories ``Cc`` (controls), ``Cf`` (format), ``Zl`` and ``Zp`` (separators), and the
characters of other categories that are drawn as nothing (``INVISIBLE``: the Hangul fillers, the braille blank,
the combining grapheme joiner, the variation selectors, the Mongolian free variation selectors). Each is written as
a Python-style escape (``\\x1b``, ``\\u202e``, ``\\U000e0041``) or the caller's shorter name for it.

``hidden`` adds what a name must not hold either (surrogates, private-use and unassigned code points): the one
definition the spec's refusals of ``to:``, ``--to``, ``--dest`` and names use; the instance's copy (standard library
only, ``instance/staging_files.py``) is compared with it over every code point by a test.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
NOT_A_CHARACTER = frozenset({"Cs", "Co", "Cn"})
"""Surrogates, private-use and unassigned code points: no name holds one."""
INVISIBLE: tuple[tuple[int, int], ...] = (
    (0x034F, 0x034F),  # COMBINING GRAPHEME JOINER (Mn)
    (0x115F, 0x1160),  # HANGUL CHOSEONG / JUNGSEONG FILLER (Lo)
    (0x17B4, 0x17B5),  # KHMER VOWEL INHERENT AQ / AA (Mn)
    (0x180B, 0x180F),  # MONGOLIAN FREE VARIATION SELECTORS ONE-FOUR, VOWEL SEPARATOR (Mn, Cf)
    (0x2800, 0x2800),  # BRAILLE PATTERN BLANK (So)
    (0x3164, 0x3164),  # HANGUL FILLER (Lo)
    (0xFE00, 0xFE0F),  # VARIATION SELECTOR-1 to -16 (Mn)
    (0xFFA0, 0xFFA0),  # HALFWIDTH HANGUL FILLER (Lo)
    (0xE0100, 0xE01EF),  # VARIATION SELECTOR-17 to -256 (Mn)
)
"""Code points of other categories than the unsafe ones that are drawn as nothing (inclusive ranges)."""
_INVISIBLE = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in INVISIBLE) + "]")
REPORT_NAMES: Mapping[str, str] = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
"""How the review's reports write the common controls (the way the findings quote names with ``repr``)."""


def invisible(char: str) -> bool:
    """Whether ``char`` is one of the characters drawn as nothing (``INVISIBLE``)."""
    return _INVISIBLE.match(char) is not None


def unsafe(char: str) -> bool:
    """Whether printing ``char`` raw could change what the terminal or a rendered page shows."""
    return unicodedata.category(char) in UNSAFE_CATEGORIES or invisible(char)


def hidden(char: str) -> bool:
    """Whether ``char`` does not read as itself in a name: unsafe, or not a character at all."""
    return unsafe(char) or unicodedata.category(char) in NOT_A_CHARACTER


def _shown(char: str, named: Mapping[str, str]) -> str:
    if char in named:
        return named[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def escaped(text: str, named: Mapping[str, str] = REPORT_NAMES, keep: str = "") -> str:
    """``text`` with every unsafe character except those in ``keep`` written out (``named`` first)."""
    if text.isprintable() and not _INVISIBLE.search(text):
        return text  # no control, format, separator or invisible character at all (the common case, checked in C)
    return "".join(_shown(c, named) if c not in keep and unsafe(c) else c for c in text)


def printable(text: object) -> str:
    """``text`` as the review's reports print it: ``"a\\x1b[31m"`` shows as ``a\\x1b[31m``, everything safe as it
    is."""
    return escaped(str(text))
