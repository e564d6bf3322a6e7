"""Stack config as the Pulumi engine hands it to a program."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def engine_config(config: Mapping[str, Any], project: str) -> tuple[dict[str, str], list[str]]:
    """Config as the engine hands it to a program: namespaced keys, structured values as JSON strings.

    ``secure:`` values cannot be decrypted offline; they become a placeholder marked secret."""
    out: dict[str, str] = {}
    secrets: list[str] = []
    for key, value in config.items():
        full = key if ":" in key else f"{project}:{key}"
        if isinstance(value, Mapping) and set(value) == {"secure"}:
            out[full] = "[secret]"
            secrets.append(full)
        elif isinstance(value, str):
            out[full] = value
        else:
            out[full] = json.dumps(value)
    return out, secrets
