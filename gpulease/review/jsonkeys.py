"""JSON keys in one casing: camelCase, like the stack config and Pulumi's own documents."""

from __future__ import annotations

import re
from typing import Any

_SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+\Z")


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def camel_keys(value: Any) -> Any:
    """Every ``snake_case`` key of the kit's own documents in camelCase (``hourly_usd`` → ``hourlyUsd``); other
    keys (a tag key such as ``gpulease:node``, ``Name``) are left as they are: only all-lowercase snake names
    change. Not for documents that carry a resource's inputs (a user's tag key may be snake case)."""
    if isinstance(value, dict):
        return {(camel(k) if isinstance(k, str) and _SNAKE.match(k) else k): camel_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [camel_keys(v) for v in value]
    return value
