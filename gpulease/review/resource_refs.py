"""Resources used as values, as the engine passes them on: a custom resource as its id, a component as its URN.

A program may hand a resource object itself to an input (``instance_roles=[role]``), to ``pulumi.export`` or to
``register_outputs``. The SDK sends it as a resource reference (a struct carrying the reference signature, the
URN and, for a custom resource, the id). A provider that does not take references receives the reference
downgraded to the id (custom) or the URN (component): what the mocks, the analyzer and the report receive here
too. The SDK's mock monitor would instead rebuild a resource object from each reference on its own thread,
outside the program's event loop.
"""

from __future__ import annotations

from math import isfinite
from typing import Any

import pulumi
from google.protobuf import struct_pb2
from pulumi.runtime import rpc

from gpulease.review.captured_values import SECRET

_SIG = rpc._special_sig_key
_RESOURCE = rpc._special_resource_sig


def downgrade(struct: struct_pb2.Struct) -> bool:
    """Downgrade the resource references of a properties struct in place; whether every number left in it is
    finite. NaN and Infinity are found in the same walk (``non_finite``: the wire form cannot carry them), so that
    a registration's inputs are walked once; ``non_finite.non_finite_paths`` names them when there are any."""
    finite = True
    fields = struct.fields
    pending = [[fields[key] for key in fields]]  # by key: a map's values() iterates in Python
    while pending:
        for value in pending.pop():
            kind = value.WhichOneof("kind")
            if kind == "string_value":
                continue
            if kind == "number_value":
                if not isfinite(value.number_value):
                    finite = False
            elif kind == "struct_value":
                inner = value.struct_value.fields
                sig = inner.get(_SIG)
                if sig is not None and sig.string_value == _RESOURCE:
                    rid = inner["id"].string_value if "id" in inner else ""
                    value.string_value = rid or inner["urn"].string_value
                else:
                    pending.append([inner[key] for key in inner])
            elif kind == "list_value":
                pending.append(value.list_value.values)
    return finite


async def plain_value(value: Any) -> Any:
    """A value with its outputs resolved and each resource in it downgraded (its id; a component: its URN), as
    the engine records an export that holds one. A secret export (or one holding a secret) is ``[secret]``: its
    value is never shown in a report."""
    output = pulumi.Output.from_input(value)
    resolved = await output.future()
    if await output.is_secret():
        return SECRET
    return await _downgrade_resources(resolved)


async def _downgrade_resources(value: Any) -> Any:
    if isinstance(value, pulumi.Resource):
        rid = await value.id.future() if isinstance(value, pulumi.CustomResource) else None
        return rid or await value.urn.future()
    if isinstance(value, dict):
        return {k: await _downgrade_resources(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [await _downgrade_resources(v) for v in value]
    return value
