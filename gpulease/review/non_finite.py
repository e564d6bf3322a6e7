"""Inputs holding NaN or Infinity: the wire form cannot carry them to a policy pack.

``google.protobuf.Value`` holds a double, but its JSON mapping has no NaN or Infinity (``json_format`` raises
"Fail to serialize NaN for Value.number_value"), and the policy SDK reads every resource through that mapping
(pulumi-policy 1.21 ``_deserialize_properties`` via ``MessageToDict``), so an analyzer would fail on the resource
rather than judge it. Whether the engine itself refuses such a registration could not be verified without the
Pulumi CLI; the review refuses it either way: the resource is named with the program's ``file:line`` and the
input, never judged or priced, and the render is a failure (partial when anything else was registered).
"""

from __future__ import annotations

import math
from typing import Any

MAX_FOUND = 3
"""At most this many inputs are named per resource (the first ones, in input order)."""


def _any_non_finite(struct: Any) -> bool:
    """Whether a ``Struct`` holds a NaN or infinite number anywhere (no paths: the common case finds none)."""
    pending = [[struct.fields[key] for key in struct.fields]]  # by key: a map's values() iterates in Python
    while pending:
        for value in pending.pop():
            which = value.WhichOneof("kind")
            if which == "number_value":
                if not math.isfinite(value.number_value):
                    return True
            elif which == "struct_value":
                fields = value.struct_value.fields
                pending.append([fields[key] for key in fields])
            elif which == "list_value":
                pending.append(value.list_value.values)
    return False


def non_finite_paths(struct: Any) -> list[str]:
    """Dotted paths (list indices as numbers) of the NaN or infinite numbers in a ``google.protobuf.Struct``."""
    found: list[str] = []
    if not _any_non_finite(struct):
        return found
    stack: list[tuple[str, Any]] = [(key, struct.fields[key]) for key in reversed(list(struct.fields))]
    while stack and len(found) < MAX_FOUND:
        path, value = stack.pop()
        which = value.WhichOneof("kind")
        if which == "number_value" and not math.isfinite(value.number_value):
            found.append(f"{path}={value.number_value!r}")
        elif which == "struct_value":
            fields = value.struct_value.fields
            stack.extend((f"{path}.{key}", fields[key]) for key in reversed(list(fields)))
        elif which == "list_value":
            items = value.list_value.values
            stack.extend((f"{path}.{i}", items[i]) for i in reversed(range(len(items))))
    return found


def refusal(type_: str, name: str, paths: list[str], site: str | None) -> str:
    """The one line naming the resource, its ``file:line`` and the inputs that are not finite numbers."""
    where = f"{site}: " if site else ""
    return (f"{where}{type_} {name!r}: {', '.join(paths)} is not a finite number (NaN and Infinity cannot be sent "
            "to a policy pack); accepted: a finite number, e.g. 100")
