"""A validation error in the user's words: what the value is and what is accepted, never pydantic's own text
("Input should be a valid number", "Value error,", "instance of X", "type=...", a link to errors.pydantic.dev).

The stack spec's messages (``components/spec/messages.py``) and the catalog files' (``gpulease/core/catalog``)
read the same tables."""

from __future__ import annotations

import json
from typing import Any

from gpulease.core.shown import cap_quoted

KIND_ACCEPTED = {
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "int_parsing": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "text (quote it)",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping of fields",
    "model_attributes_type": "a mapping of fields",
    "datetime_type": "an RFC 3339 time with Z or an offset, e.g. 2026-11-30T10:00:00Z",
    "datetime_parsing": "an RFC 3339 time with Z or an offset, e.g. 2026-11-30T10:00:00Z",
    "datetime_from_date_parsing": "an RFC 3339 time with Z or an offset, e.g. 2026-11-30T10:00:00Z",
    "date_type": "a date, e.g. 2026-11-30",
    "date_parsing": "a date, e.g. 2026-11-30",
    "date_from_datetime_parsing": "a date, e.g. 2026-11-30",
    "finite_number": "a finite number",
}
"""What a value of the wrong kind should have been, by pydantic's error type."""
BOUNDS = {
    "greater_than": "a number greater than {gt}",
    "greater_than_equal": "a number greater than or equal to {ge}",
    "less_than": "a number less than {lt}",
    "less_than_equal": "a number less than or equal to {le}",
    "string_too_short": "at least {min_length} character(s)",
    "string_too_long": "at most {max_length} characters",
    "too_short": "at least {min_length} item(s)",
    "too_long": "at most {max_length} item(s)",
}
"""What a value out of its range should have been, by pydantic's error type."""


def kind_of(value: Any) -> str:
    """What a YAML value is, in the user's words."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return "empty (null)" if value is None else type(value).__name__


def shown(value: Any) -> str:
    """A value as a message repeats it: JSON, capped (``gpulease.core.shown``)."""
    return cap_quoted(json.dumps(value, default=str))


def bound_words(kind: str, ctx: dict[str, Any]) -> str:
    """``a number greater than 0`` for a bound error (``kind`` one of ``BOUNDS``)."""
    bounds = {k: (int(v) if isinstance(v, float) and v.is_integer() else v) for k, v in ctx.items()}
    return BOUNDS[kind].format(**bounds)


def described(err: dict[str, Any]) -> str | None:
    """One pydantic error (an item of ``ValidationError.errors()``) as ``<value> is <kind>; accepted: <what>``,
    or None for a kind these tables do not know (the caller says it its own way)."""
    kind = err["type"]
    given = err.get("input")
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "value_error":
        return str((err.get("ctx") or {}).get("error") or "") or None
    if kind in BOUNDS:
        return f"{shown(given)} is out of range; accepted: {bound_words(kind, err.get('ctx') or {})}"
    if kind in KIND_ACCEPTED:
        what = "is empty (null)" if given is None else f"{shown(given)} is {kind_of(given)}"
        return f"{what}; accepted: {KIND_ACCEPTED[kind]}"
    if kind == "literal_error":
        return f"{shown(given)} is not one of the choices; accepted: {(err.get('ctx') or {}).get('expected', '')}"
    return None


def a_or_an(word: str) -> str:
    """``word`` after its indefinite article, by how it is written (``an AWS``, ``an Alibaba Cloud``, ``a GPU``)."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"
