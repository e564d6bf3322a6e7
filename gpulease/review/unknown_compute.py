"""GPU compute a preview cannot see: the field that decides a compute form's instance type is not known offline.

Where a compute reader (``gpulease.core.compute``: a form's ``instance_types`` paths or its ``type_reader``) reads
the field that decides what a compute-bearing resource launches, a value not known during preview (the engine's
unknown sentinel in the registration's wire form: an output of a resource not created yet, a stack reference's
output, which nothing answers offline) may be a GPU type. The review cannot judge it, so it is partial (exit 3),
never a default type and never "no GPU": ``problem`` gives the one line, with the program's ``file:line``.

A stack reference (``pulumi.StackReference``) is answered offline only for the outputs the mocks know
(``mocks_images.stack_reference``); the SDK reads any other name as a known ``None``, which the engine form drops,
so the field would look absent and take a default. ``unknown_stack_outputs`` makes those outputs unknown instead,
as they are to anyone who cannot read the other stack; so is the whole output map, ``ref.outputs``, read from a
program frame (the SDK's own reads see the mocks' answer): the map holds values the review does not have.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import pulumi
from pulumi.runtime import rpc

from gpulease.core import resources as rt
from gpulease.core.compute import UNKNOWN, Registered, form_of, read_all, templates_of
from gpulease.core.compute.components import MODELLED_COMPONENTS
from gpulease.core.compute.scan import MAY_BE_GPU, gpu_mentions
from gpulease.review.engine_config import secure_keys_read
from gpulease.review.invoke_sites import is_program_path

STACK_REFERENCE = "pulumi:pulumi:StackReference"


def is_secret(value: Any) -> bool:
    """Whether ``value`` is the SDK's envelope of a secret (``rpc.wrap_rpc_secret``: its signature key and value)."""
    return isinstance(value, Mapping) and value.get(rpc._special_sig_key) == rpc._special_secret_sig


_UNKNOWN_BYTES = rpc.UNKNOWN.encode()
_SECRET_BYTES = rpc._special_secret_sig.encode()


def wire_holds_unknown(struct: Any) -> bool:
    """Whether ``struct`` (a registration's wire inputs) holds the engine's unknown sentinel anywhere: one search of
    its serialized bytes, where the sentinel is a string written as itself."""
    return _UNKNOWN_BYTES in struct.SerializeToString()


def holds_unknown_or_secret(struct: Any) -> bool:
    data = struct.SerializeToString()
    return _UNKNOWN_BYTES in data or _SECRET_BYTES in data


def wire_values(struct: Any) -> Any:
    """A registration's wire inputs as plain data, the engine's unknown sentinel read as ``UNKNOWN``, a secret as
    the value it holds."""
    return _marked(rpc.deserialize_properties(struct, keep_unknowns=True))


def _marked(value: Any) -> Any:
    if value is rpc.UNKNOWN or type(value).__name__ == "Unknown":
        return UNKNOWN
    if is_secret(value):
        return _marked(value.get("value"))  # the value a secret holds: read as itself, never as its envelope
    if isinstance(value, Mapping):
        return {k: _marked(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_marked(v) for v in value]
    return value


def _first_unknown(value: Any, path: str) -> str | None:
    """The dotted path of the first ``UNKNOWN`` in ``value`` (``path`` names ``value``), or None."""
    if value is UNKNOWN:
        return path
    if isinstance(value, Mapping):
        for key, inner in value.items():
            if (found := _first_unknown(inner, f"{path}.{key}" if path else str(key))) is not None:
                return found
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            if (found := _first_unknown(inner, f"{path}[{index}]")) is not None:
                return found
    return None


def holds_unknown(value: Any) -> bool:
    """Whether ``value`` is ``UNKNOWN`` or holds it anywhere inside (list elements, mapping values)."""
    return _first_unknown(value, "") is not None


def _path_prefix(props: Mapping[str, Any], path: str) -> str:
    """The part of ``path`` (``*`` steps kept) down to the first value not known, with the unknown element's place."""
    steps = path.split(".")
    for end in range(1, len(steps) + 1):
        prefix = ".".join(steps[:end])
        for value in read_all(props, prefix):
            if (found := _first_unknown(value, prefix)) is not None:
                return found
    return path


def _template_unknown(value: Any, path: str, id_key: str | None, name_key: str | None) -> str | None:
    """The path of a template reference not known offline (the reference itself, or its id or name), or None."""
    if value is UNKNOWN:
        return path
    if not isinstance(value, Mapping):
        return None
    keys = [k for k in (id_key, name_key) if k]
    if any(value.get(k) is UNKNOWN for k in keys):
        return f"{path}.{next(k for k in keys if value.get(k) is UNKNOWN)}"
    return None


IGNORED = ("tags", "tagsAll", "metadata")
"""Inputs that never decide a form's instance types (an unknown tag is judged by the tag rules)."""


def unknown_field(type_: str, props: Mapping[str, Any]) -> str | None:
    """The field deciding ``type_``'s instance types or accelerators that is not known offline, or None."""
    form = form_of(type_)
    if form is None:
        return None
    for path in form.instance_types:
        if any(holds_unknown(value) for value in read_all(props, path)):
            return _path_prefix(props, path)
    if form.default_types and not any(read_all(props, path) for path in form.instance_types):
        # No types of its own: a launch template decides them (an EKS node group's default applies only without
        # one); a template unknown offline leaves them unknown.
        for ref in form.templates:
            for value in read_all(props, ref.path):
                if (found := _template_unknown(value, ref.path, ref.id_key, ref.name_key)) is not None:
                    return found
    if form.type_reader is not None and holds_unknown(list(form.type_reader(props))):
        for key in props:
            if key not in IGNORED and (found := _first_unknown(props[key], key)) is not None:
                return found
        return "its instance types"
    return None


def _why(field: str, dependencies: Mapping[str, list[str]]) -> str:
    top = field.split(".")[0].split("[")[0]
    urns = dependencies.get(top) or []
    for urn in urns:
        kind, name = urn.split("::")[2].split("$")[-1], urn.split("::")[-1]
        if kind == STACK_REFERENCE:
            return f"an output of stack reference {name!r}, not read offline"
    if urns:
        kind, name = urns[0].split("::")[2].split("$")[-1], urns[0].split("::")[-1]
        return f"an output of {kind} {name!r}, not created during preview"
    if read := secure_keys_read():
        keys = ", ".join(repr(k) for k in read)
        return (f"a value not known during preview; the program read the secure config {keys}, which cannot be "
                "decrypted offline")
    return "a value not known during preview"


def _unjudged(type_: str) -> bool:
    """The types the pack's ``unjudged-gpu-compute`` scan reads (no compute form, may cost something)."""
    return (form_of(type_) is None and not type_.startswith("pulumi:") and not rt.is_free_type(type_)
            and type_ not in MODELLED_COMPONENTS)


K8S_WORKLOADS = frozenset({"Pod", "PodTemplate", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job",
                           "CronJob", "ReplicationController"})
K8S_BUILTIN_GROUPS = frozenset({
    "core", "apps", "batch", "networking.k8s.io", "rbac.authorization.k8s.io", "storage.k8s.io", "policy",
    "autoscaling", "apiextensions.k8s.io", "admissionregistration.k8s.io", "scheduling.k8s.io", "coordination.k8s.io",
    "discovery.k8s.io", "certificates.k8s.io", "node.k8s.io", "flowcontrol.apiserver.k8s.io", "events.k8s.io",
    "apiregistration.k8s.io", "authentication.k8s.io", "authorization.k8s.io", "resource.k8s.io", "meta", "helm.sh",
    "yaml", "kustomize", "storagemigration.k8s.io", "internal.apiserver.k8s.io"})


def pod_bearing(type_: str) -> bool:
    """A Kubernetes workload (``kubernetes:apps/v1:Deployment``) or a custom resource of a kind outside the
    built-in API groups (``kubernetes:ray.io/v1:RayCluster``): its spec may hold pods asking for GPUs."""
    parts = type_.split(":")
    if len(parts) != 3 or parts[0] != "kubernetes":
        return False
    return parts[2] in K8S_WORKLOADS or parts[1].split("/")[0] not in K8S_BUILTIN_GROUPS


def unscanned_field(props: Mapping[str, Any], type_: str = "") -> str | None:
    """For a type outside the compute-form registry: the GPU-deciding input (an instance type key, a GPU count,
    a node selector or requirement on instance types, on a workload a parent of those) not known offline, or None
    (``scan.gpu_mentions``)."""
    mentions = gpu_mentions(props, unknowns=True, parents=pod_bearing(type_))
    return next((path for path, what in mentions if what == MAY_BE_GPU), None)


def problem(request: Any, site_of: Callable[[Any], str | None]) -> str | None:
    """One line when ``request`` (a RegisterResource) is a compute form whose instance type is not known, or a type
    the pack cannot judge whose GPU-deciding input is not known; ``site_of(request)`` (its program site) is only
    called then."""
    if not (form_of(request.type) is not None or _unjudged(request.type)) or not wire_holds_unknown(request.object):
        return None  # not a type read for compute, or nothing in it unknown offline
    if form_of(request.type) is not None:
        field = unknown_field(request.type, wire_values(request.object))
        judged = "the review cannot judge what it launches"
    elif _unjudged(request.type):
        field = unscanned_field(wire_values(request.object), request.type)
        judged = "no compute form reads this type and the GPU scan cannot see what it asks for"
    else:
        return None
    if field is None:
        return None
    deps = {k: list(v.urns) for k, v in request.propertyDependencies.items()}
    site = site_of(request)
    where = f"{site}: " if site else ""
    return (f"{where}GPU compute may be here: {field} of {request.type} {request.name!r} is unknown offline "
            f"({_why(field, deps)}); {judged}; accepted: a known value")


def _shown(value: Any, ref: Any) -> Any:
    """A template reference as the program wrote it: its id or name."""
    if not isinstance(value, Mapping):
        return value
    return next((value[k] for k in (ref.id_key, ref.name_key) if k and value.get(k) is not None), value)


def absent_template(request: Any, urn: str, site_of: Callable[[Any], str | None],
                    captured: Sequence[Any]) -> Callable[[], str | None] | None:
    """A form that takes its types from a launch template when it names none (an EKS node group) and names a
    template by a literal id or name: once the program has ended (the template may come later), the line saying
    its types are unknown when no template of the program is the one named (a template made elsewhere)."""
    form = form_of(request.type)
    if form is None or not form.default_types or not form.templates:
        return None
    props = wire_values(request.object)
    if any(read_all(props, path) for path in form.instance_types):
        return None
    named = [_shown(value, ref) for ref in form.templates for value in read_all(props, ref.path)]
    if not named or any(holds_unknown(value) for value in named):
        return None  # a reference unknown offline is ``unknown_field``'s
    site = site_of(request)  # now: the shown path depends on the working folder of the render

    def check() -> str | None:
        regs = [Registered(type=c.type, name=c.name, urn=c.urn, props={**c.inputs, **({"id": c.id} if c.id else {})},
                           dependencies=c.property_dependencies) for c in captured]
        me = next((r for r in regs if r.urn == urn), None)
        if me is None or not templates_of(me, regs)[1]:
            return None
        where = f"{site}: " if site else ""
        return (f"{where}GPU compute may be here: {request.type} {request.name!r} sets no instance types and its "
                f"launch template ({named[0]!r}) is none of the program's, so its instance types are unknown "
                "offline; accepted: instance_types on it, or a launch template of the program")

    return check


@contextmanager
def unknown_stack_outputs() -> Iterator[None]:
    """Stack reference outputs the mocks do not answer read as unknown, not as ``None`` (see the module doc)."""
    original_get, original_require = pulumi.StackReference.get_output, pulumi.StackReference.require_output

    def answered(ref: pulumi.StackReference, name: Any) -> pulumi.Output[bool]:
        return pulumi.Output.all(pulumi.Output.from_input(name), ref.outputs).apply(
            lambda pair: isinstance(pair[1], Mapping) and pair[0] in pair[1])

    def unknown_unless_answered(ref: pulumi.StackReference, name: Any, original: Any) -> pulumi.Output[Any]:
        if not pulumi.runtime.is_dry_run():
            return original(ref, name)
        value = original_get(ref, name)
        known = answered(ref, name)

        async def is_known() -> bool:
            return bool(await known.future()) and await value.is_known()

        async def future() -> Any:
            if not await known.future():
                return None
            return await original(ref, name).future()

        return pulumi.Output(value.resources(), future(), is_known(), value.is_secret())

    def outputs(ref: pulumi.StackReference) -> Any:
        real = ref.__dict__.get("outputs")  # set by the SDK's registration (``rpc.transfer_properties``)
        if real is None or not is_program_path(sys._getframe(1).f_code.co_filename) or not pulumi.runtime.is_dry_run():
            return real
        return pulumi.Output(real.resources(), _none(), _false(), real.is_secret())

    pulumi.StackReference.get_output = lambda ref, name: unknown_unless_answered(ref, name, original_get)
    pulumi.StackReference.require_output = lambda ref, name: unknown_unless_answered(ref, name, original_require)
    had = pulumi.StackReference.__dict__.get("outputs")  # only annotated in the SDK
    pulumi.StackReference.outputs = property(outputs)  # type: ignore[assignment]
    try:
        yield
    finally:
        pulumi.StackReference.get_output, pulumi.StackReference.require_output = original_get, original_require
        if had is None:
            del pulumi.StackReference.outputs
        else:
            pulumi.StackReference.outputs = had


async def _none() -> None:
    return None


async def _false() -> bool:
    return False
