"""Reading a resource's inputs by path, with values not known during preview kept apart from absent ones.

A path is dotted input names in engine form (camelCase), ``*`` standing for every element of a list:
``mixedInstancesPolicy.launchTemplate.overrides.*.instanceType``. ``read`` gives one value (``None`` when absent,
``UNKNOWN`` when not known during preview); ``read_all`` gives every value a ``*`` path reaches.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from gpulease.core import resources as rt


class _Unknown:
    """A value that cannot be known during preview (an output of a resource not created yet)."""

    def __repr__(self) -> str:
        return "<unknown>"

    def __bool__(self) -> bool:
        return False


UNKNOWN: Any = _Unknown()


def _step(value: Any, key: str) -> Any:
    if value is UNKNOWN:
        return UNKNOWN
    if isinstance(value, Mapping):
        return value.get(key)
    return None


def read_all(data: Any, path: str) -> list[Any]:
    """Every value ``path`` reaches (``UNKNOWN`` kept; absent values and ``None`` left out)."""
    values = [data]
    for key in path.split("."):
        nxt: list[Any] = []
        for value in values:
            if key == "*":
                if value is UNKNOWN:
                    nxt.append(UNKNOWN)
                elif isinstance(value, Sequence) and not isinstance(value, str | bytes):
                    nxt.extend(value)
            else:
                nxt.append(_step(value, key))
        values = [v for v in nxt if v is not None]
    return values


def read(data: Any, path: str, default: Any = None) -> Any:
    """The one value at ``path`` (no ``*``): ``default`` when absent, ``UNKNOWN`` when not known during preview."""
    value = data
    for key in path.split("."):
        value = _step(value, key)
        if value is None:
            return default
    return value


def number(value: Any) -> Any:
    """A finite number from a number or its text; ``UNKNOWN`` stays ``UNKNOWN``; anything else is None."""
    return UNKNOWN if value is UNKNOWN else rt.number(value)


MAX_JSON = 1_000_000
"""Text inputs holding JSON (a state machine's ``definition``, a SageMaker pipeline's ``pipelineDefinition``, a
schedule's ``input``) up to this many characters are read as the values they hold."""


def embedded_json(value: Any) -> Any:
    """The value a JSON text input holds (None when ``value`` is no JSON object or list)."""
    if not isinstance(value, str) or len(value) > MAX_JSON or not value.lstrip().startswith(("{", "[")):
        return None
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return None


def json_object(value: Any) -> Mapping[str, Any] | None:
    """The JSON object a text input holds; None when it is absent, not known, too long, not JSON or not an object."""
    data = embedded_json(value)
    return data if isinstance(data, Mapping) else None
