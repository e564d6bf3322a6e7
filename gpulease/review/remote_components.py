"""Multi-language components offline: a model builds the children the component's provider would, or the review is
partial.

A remote component (``remote=True``: ``pulumi_eks.Cluster``, ``pulumi_awsx.ec2.Vpc``, ...) is built by its
provider in another process under a real engine: its children never pass through the program. Offline, the
component's model (``gpulease.review.models``, one file each) registers those children with the component as
their parent (the same type tokens and input shapes as the component's source) and answers the component's
outputs in the SDK's own output types. A remote component without a model is a gap: the review names it, its type
token, the program's ``file:line`` and its inputs that name compute, and is partial (exit 3).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import struct_pb2
from pulumi.runtime import rpc
from pulumi.runtime.proto import resource_pb2

from gpulease.review import manifest_text, mock_registry
from gpulease.review.invoke_sites import is_program_path, site_text
from gpulease.review.mock_registry import Child

_COMPUTE_KEY = re.compile(r"instance_?type|instance_?class|machine_?type|accelerator|gpu|(desired|min|max)_?(size|"
                          r"capacity|count)|capacity|node_?count|replicas|(^|_)count$|(^|_)size$|scaling", re.I)


def registration_site(request: Any) -> str | None:
    """``file:line`` of the program's frame that registered a resource (its stack trace, innermost first)."""
    for frame in request.stackTrace.frames:
        uri = frame.pc.uri if frame.HasField("pc") else ""
        path = uri.removeprefix("file://")
        if path and is_program_path(path):
            return site_text((path, frame.pc.line))
    return None


def compute_inputs(inputs: Any, prefix: str = "") -> list[str]:
    """``path=value`` for every input whose name says it sizes or chooses compute."""
    out: list[str] = []
    if isinstance(inputs, dict):
        for key, value in inputs.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            if _COMPUTE_KEY.search(str(key)) and not isinstance(value, dict):
                out.append(f"{path}={value!r}")
            else:
                out += compute_inputs(value, path)
    elif isinstance(inputs, list):
        for index, value in enumerate(inputs):
            out += compute_inputs(value, f"{prefix}[{index}]")
    return out


@dataclass
class Gap:
    """A remote component the review has no model for."""

    token: str
    name: str
    site: str | None
    compute: list[str]
    note: str = ""

    def describe(self) -> str:
        where = f" at {self.site}" if self.site else ""
        sizes = f"; its inputs that name compute: {', '.join(self.compute)}" if self.compute else ""
        return (f"the remote component {self.token} {self.name!r}{where} has no offline model, so what it creates "
                f"was not reviewed{sizes}{self.note} (modelled: {', '.join(sorted(mock_registry.COMPONENTS))}; see "
                "docs/policies.md#components-offline)")


def _plain(value: Any) -> Any:
    if isinstance(value, dict) and value.get(rpc._special_sig_key) == rpc._special_secret_sig:
        # One secret field makes the SDK send the whole dict as one secret: the model reads what it holds (the
        # reports hide the secret value itself, ``redact``).
        return _plain(value.get("value"))
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is rpc.UNKNOWN or type(value).__name__ == "Unknown":
        return rpc.UNKNOWN
    if isinstance(value, float) and value.is_integer():
        return int(value)  # the wire carries every number as a double; the component's code sees 2, not 2.0
    return value


def _struct(value: dict[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(value)
    return struct


@dataclass
class _Build:
    monitor: Any
    request: Any
    urn: str
    name: str
    inputs: dict[str, Any]
    region: str
    children: list[Child] = field(default_factory=list)

    def child(self, type_: str, name: str, inputs: dict[str, Any], *,
              depends: Mapping[str, list[Child | str]] | None = None,
              ignore_changes: list[str] | None = None) -> Child:
        package = type_.split(":", 1)[0]
        provider = self.request.providers.get(package, "")
        clean = {k: v for k, v in inputs.items() if v is not None}
        urns = {key: [c if isinstance(c, str) else c.urn for c in children]
                for key, children in (depends or {}).items() if children}
        request = resource_pb2.RegisterResourceRequest(
            type=type_, name=name, parent=self.urn, custom=True, object=_struct(clean), provider=provider,
            dependencies=sorted({u for group in urns.values() for u in group}),
            propertyDependencies={k: resource_pb2.RegisterResourceRequest.PropertyDependencies(urns=v)
                                  for k, v in urns.items()},
            ignoreChanges=list(ignore_changes or []), acceptSecrets=True, acceptResources=True,
            stackTrace=self.request.stackTrace)
        response = self.monitor.RegisterResource(request)
        outputs = _plain(rpc.deserialize_properties(response.object)) if response.object else {}
        made = Child(urn=response.urn, id=response.id, type=type_, outputs=outputs)
        self.children.append(made)
        return made

    def input_dependencies(self, key: str) -> list[str]:
        deps = self.request.propertyDependencies
        return list(deps[key].urns) if key in deps else []

    def outputs_of(self, urn: str) -> dict[str, Any]:
        found = next((r for r in self.monitor.captured if r.urn == urn), None)
        return dict(found.outputs) if found is not None else {}


def expand(monitor: Any, request: Any, urn: str, region: str) -> tuple[dict[str, Any], Gap | None]:
    """Build a remote component's children with its model; its outputs (engine names), or the gap. The request's
    resource references are already downgraded (``resource_refs``)."""
    inputs = _plain(rpc.deserialize_properties(request.object, keep_unknowns=True))
    model = mock_registry.COMPONENTS.get(request.type)
    if model is None:
        return {}, Gap(request.type, request.name, registration_site(request), compute_inputs(inputs),
                       manifest_text.gpu_note(inputs))
    return model.build(_Build(monitor, request, urn, request.name, inputs, region)), None
