"""Small JSON Schema phrases the spec's models use to state their cross-field rules (``json_schema_extra``)."""

from __future__ import annotations

from typing import Any


def given(field: str, value: dict[str, Any] | None = None) -> dict[str, Any]:
    """``field`` is given and not null (and, with ``value``, matches it)."""
    return {"required": [field], "properties": {field: value or {"not": {"type": "null"}}}}


def together(a: str, b: str) -> dict[str, Any]:
    """When ``a`` is given (not null), so is ``b``."""
    return {"if": given(a), "then": given(b)}


def is_value(field: str, value: Any, default: Any) -> dict[str, Any]:
    """``field`` is ``value``: named, or not named when ``value`` is its default."""
    named = given(field, {"const": value})
    return {"anyOf": [named, {"not": {"required": [field]}}]} if value == default else named


def absent(field: str) -> dict[str, Any]:
    """``field`` is not given (or null)."""
    return {"properties": {field: {"type": "null"}}}
