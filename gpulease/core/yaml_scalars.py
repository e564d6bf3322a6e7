"""What a plain YAML scalar means, as the Pulumi CLI reads a stack file: YAML 1.2's rules as ``gopkg.in/yaml.v3``
applies them (the Pulumi CLI is written in Go and reads ``Pulumi.yaml`` and ``Pulumi.<stack>.yaml`` with it), then
the value as the program receives it (a structured config value travels to the program as JSON).

The rules, from yaml.v3's ``resolve.go`` (``resolve``, ``resolveMap``, ``yamlStyleFloat``, ``parseTimestamp``) and
``decode.go`` (a timestamp decoded into ``interface{}`` stays a string), v3.0.1:

- ``null``, ``Null``, ``NULL``, ``~`` and the empty scalar are null; ``true``/``True``/``TRUE`` and
  ``false``/``False``/``FALSE`` are booleans. ``yes``, ``no``, ``on``, ``off``, ``y``, ``n`` are text (YAML 1.1's
  booleans are gone).
- A scalar starting with a digit or a sign is tried, underscores removed, as a Go integer literal (``strconv.ParseInt``
  with base 0: ``0x1F`` is 31, ``0o17`` and ``017`` are 15, ``0b11`` is 3, ``+1`` is 1, ``1_000`` is 1000) within
  64 bits, then as a float (``1e3``, ``1.``, ``+1.5``; ``09`` is the float 9), otherwise it is text.
  ``1:00`` and ``1:30`` are text (no YAML 1.1 base-60 numbers). A number too large for 64 bits (``1e999``, 5,000
  digits) is text to yaml.v3; ``resolve`` says ``OUT_OF_RANGE`` so that the reader can refuse it (no one means
  the text).
- A scalar starting with ``.`` is a float when Go's ``strconv.ParseFloat`` parses it as written (``.5``, and
  ``.5_0`` is 0.5: an underscore between two digits is a separator, ``._5`` and ``.5_`` are text); ``.inf``/``.nan`` (three spellings each) are
  infinity and NaN.
- Timestamps (``2026-11-30``, ``2026-11-30T10:00:00Z``) are text.
- Quoted scalars are always text.

A float with no fractional part arrives in the program as a whole number: Go's JSON encoder writes ``8.0`` as ``8``
(and, from 1e21 on, with an exponent, which JSON readers take as a float); ``as_program_sees`` applies the same.
"""

from __future__ import annotations

import math
import re

NULLS = frozenset(("", "~", "null", "Null", "NULL"))
TRUES = frozenset(("true", "True", "TRUE"))
FALSES = frozenset(("false", "False", "FALSE"))
SPECIAL_FLOATS = {
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
}
MERGE = "<<"

_GO_INT = (
    (re.compile(r"^([-+]?)0[xX]([0-9a-fA-F]+)\Z"), 16),
    (re.compile(r"^([-+]?)0[bB]([01]+)\Z"), 2),
    (re.compile(r"^([-+]?)0[oO]([0-7]+)\Z"), 8),
    (re.compile(r"^([-+]?)0([0-7]+)\Z"), 8),
    (re.compile(r"^([-+]?)(0|[1-9][0-9]*)\Z"), 10),
)
_YAML_STYLE_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
_DOT_FLOAT = re.compile(r"^\.[0-9][0-9_]*([eE][-+]?[0-9][0-9_]*)?\Z")
"""The leading-dot shapes Go's ``strconv.ParseFloat`` reads (``readFloat``), underscores included; where they may
stand is ``_underscores_between_digits``."""
_INT64 = (-(2**63), 2**63 - 1)
_UINT64_MAX = 2**64 - 1
_MAX_DIGITS = 70
"""Longer than any 64-bit integer in any base: never handed to ``int()`` (which refuses over 4,300 digits)."""
_GO_JSON_PLAIN_FLOAT = 1e21
"""Go's ``encoding/json`` writes a float without an exponent below this (and at or above 1e-6)."""

NULL, BOOL, INT, FLOAT, STR, MERGE_TAG = "null", "bool", "int", "float", "str", "merge"
OUT_OF_RANGE = "out-of-range"
"""A number too large for 64 bits (``1e999``, 5,000 digits): text to yaml.v3, a mistake to the kit."""


def _go_int(plain: str) -> int | None:
    """``strconv.ParseInt(plain, 0, 64)``, then ``ParseUint``: the integer, or None."""
    if len(plain) > _MAX_DIGITS:
        return None
    for pattern, base in _GO_INT:
        match = pattern.match(plain)
        if match:
            sign, digits = match.groups()
            value = int(digits, base) * (-1 if sign == "-" else 1)
            if _INT64[0] <= value <= _INT64[1] or (sign == "" and 0 <= value <= _UINT64_MAX):
                return value
            return None
    return None


def _go_float(text: str) -> float | None:
    """``strconv.ParseFloat(text, 64)`` for the shapes yaml.v3 hands it: None when it overflows (Go's ErrRange)."""
    try:
        value = float(text)
    except (ValueError, OverflowError):
        return None
    return None if math.isinf(value) else value


def _underscores_between_digits(text: str) -> bool:
    """Go's ``underscoreOK`` for a decimal float: every ``_`` has a digit just before it and just after it."""
    return all(
        0 < i < len(text) - 1 and text[i - 1].isdigit() and text[i + 1].isdigit()
        for i, c in enumerate(text) if c == "_"
    )


def resolve(text: str) -> tuple[str, object]:
    """The kind and value yaml.v3 gives the plain scalar ``text`` (decoded into an ``interface{}``)."""
    if text in NULLS:
        return NULL, None
    if text in TRUES:
        return BOOL, True
    if text in FALSES:
        return BOOL, False
    if text in SPECIAL_FLOATS:
        return FLOAT, SPECIAL_FLOATS[text]
    if text == MERGE:
        return MERGE_TAG, text
    first = text[0]
    if first == ".":
        if _DOT_FLOAT.match(text) and _underscores_between_digits(text):
            value = _go_float(text.replace("_", ""))
            if value is not None:
                return FLOAT, value
        return STR, text
    if first in "+-0123456789":
        plain = text.replace("_", "")
        number = _go_int(plain)
        if number is not None:
            return INT, number
        if _YAML_STYLE_FLOAT.match(plain):
            value = _go_float(plain)
            if value is not None:
                return FLOAT, value
            return OUT_OF_RANGE, text
        if any(pattern.match(plain) for pattern, _ in _GO_INT):
            return OUT_OF_RANGE, text
    return STR, text


def as_program_sees(value: float) -> int | float:
    """A float as the program reads it back from the JSON the Pulumi CLI writes: whole numbers below 1e21 become
    integers (Go writes ``8.0`` as ``8``)."""
    if math.isfinite(value) and value.is_integer() and abs(value) < _GO_JSON_PLAIN_FLOAT:
        return int(value)
    return value
