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

Both look the categories up in one generated table (``unicode_table.py``, from Unicode 14.0.0, the tables of
Python 3.11; ``python -m tools.unicode_table --write``), not in the running Python's ``unicodedata``: its tables
follow the Python version (Unicode 15.0 in Python 3.12, 15.1 in 3.13), and a code point unassigned in one and
assigned in the next (U+1FAE9) would make a ``to:`` path that ``gpulease plan`` accepted be refused on the paid
instance, or the other way round. For the same reason the escaper's fast path is a regular expression built from
the table, not ``str.isprintable()``.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Mapping

from gpulease.core.unicode_table import HIDDEN, UNSAFE

UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
"""The categories of ``UNSAFE`` in the table (controls, format characters, separators)."""
NOT_A_CHARACTER = frozenset({"Cs", "Co", "Cn"})
"""Surrogates, private-use and unassigned code points: no name holds one (``HIDDEN`` less ``UNSAFE``)."""
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
_UNSAFE_STARTS = tuple(a for a, _ in UNSAFE)
_HIDDEN_STARTS = tuple(a for a, _ in HIDDEN)


def _char_class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)


_BMP = tuple((a, min(b, 0xFFFF)) for a, b in sorted(UNSAFE + INVISIBLE) if a <= 0xFFFF)
_ESCAPED = re.compile("[" + _char_class(_BMP) + "\\U00010000-\\U0010ffff]")
"""The escaper's one search, in C: every character of the Basic Multilingual Plane ``unsafe`` answers True for, and
every character beyond it (rare in names; ``unsafe`` decides each). A class of BMP characters only is one bitmap
lookup per character; ranges beyond U+FFFF would be scanned one by one for every character of every name."""
REPORT_NAMES: Mapping[str, str] = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
"""How the review's reports write the common controls (the way the findings quote names with ``repr``)."""


def invisible(char: str) -> bool:
    """Whether ``char`` is one of the characters drawn as nothing (``INVISIBLE``)."""
    return _INVISIBLE.match(char) is not None


def _within(ranges: tuple[tuple[int, int], ...], starts: tuple[int, ...], code: int) -> bool:
    i = bisect_right(starts, code) - 1
    return i >= 0 and code <= ranges[i][1]


def unsafe(char: str) -> bool:
    """Whether printing ``char`` raw could change what the terminal or a rendered page shows."""
    return _within(UNSAFE, _UNSAFE_STARTS, ord(char)) or invisible(char)


def hidden(char: str) -> bool:
    """Whether ``char`` does not read as itself in a name: unsafe, or not a character at all."""
    return _within(HIDDEN, _HIDDEN_STARTS, ord(char)) or invisible(char)


def _shown(char: str, named: Mapping[str, str]) -> str:
    if char in named:
        return named[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def escaped(text: str, named: Mapping[str, str] = REPORT_NAMES, keep: str = "") -> str:
    """``text`` with every unsafe character except those in ``keep`` written out (``named`` first)."""
    if _ESCAPED.search(text) is None:
        return text  # no control, format, separator or invisible character at all (the common case, checked in C)
    return _ESCAPED.sub(lambda m: _shown(m.group(), named) if m.group() not in keep and unsafe(m.group())
                        else m.group(), text)


def printable(text: object) -> str:
    """``text`` as the review's reports print it: ``"a\\x1b[31m"`` shows as ``a\\x1b[31m``, everything safe as it
    is."""
    return escaped(str(text))
