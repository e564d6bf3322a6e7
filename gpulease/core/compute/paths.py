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


class Uncountable:
    """A size input that is no count of instances: negative, fractional, a boolean, text other than ASCII decimal
    digits (``"0x10"``, fullwidth digits), or too large for a float. The provider refuses it, so the size is
    unknown, never 1 or a negative term of a sum."""

    def __init__(self, path: str, value: Any, what: str = "a count of instances (a non-negative integer, e.g. 4)") -> None:
        self.path, self.value, self.what = path, value, what

    def __str__(self) -> str:
        value = self.value
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
            shown = f"an integer of {value.bit_length()} bits"  # its digits may be too many to print
        else:
            shown = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:37]}..."
        return f"{self.path}={shown} is not {self.what}"


def count(props: Any, path: str, default: Any = None, *, shown: str | None = None) -> Any:
    """The count of instances at ``path`` as a float: None when absent, ``UNKNOWN`` when not known during
    preview, an ``Uncountable`` when it is not a non-negative integer (a boolean is not a number). The one rule
    every size reader uses (groups, fleets, Batch vCPUs, SageMaker variants, PAI instances, node pools); ``shown``
    is the path named in the message when ``props`` is part of a resource (a variant of a list)."""
    value = read(props, path, default)
    if value is None or value is UNKNOWN:
        return value
    path = shown or path
    whole: int | None = None
    if isinstance(value, bool):
        whole = None
    elif isinstance(value, int):
        whole = value
    elif isinstance(value, float) and value.is_integer():
        whole = int(value)
    elif isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        whole = int(value.strip())
    if whole is None or whole < 0 or whole > MAX_COUNT:
        return Uncountable(path, value)
    return float(whole)


MAX_COUNT = 10**9
"""Above this no cloud accepts a size (an autoscaling group's limit is far lower): an ``Uncountable``."""


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
