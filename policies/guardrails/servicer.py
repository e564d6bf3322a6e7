"""The pack's analyzer servicer: ``pulumi_policy``'s own, with each resource's properties converted once.

``pulumi preview --policy-pack`` sends the pack one ``Analyze`` request per resource and one ``AnalyzeStack``
request with every resource. The SDK's servicer (pulumi-policy 1.21.0, ``_PolicyAnalyzerServicer``) converts a
resource's properties from the protocol's ``Struct`` into Python values and wraps them in its unknown-checking
proxy once *per policy*: with fourteen stack rules, every resource of the stack is converted fourteen times in
``AnalyzeStack``, which is most of what the pack costs at ``pulumi up`` and in ``gpulease plan``.

``SharedConversionServicer`` answers the same requests with the same diagnostics and not-applicable results,
converting each resource once per request and handing every policy the same read-only values; and a rule that
declares the types it reads (``common.judges``) is handed only resources of those types. Everything else is the
SDK's own code path: enforcement levels and config from ``Configure``, the stack tags from ``ConfigureStack``,
``report_violation``, "can't run during preview" for unknown values, remediation-only rules reported as not
applicable. ``tests/policies/test_servicer.py`` checks the answers against the SDK's servicer on every example
stack and the foreign-program corpus. The class reaches the SDK servicer's private state by its mangled names:
``check_shape`` refuses any other pulumi-policy version than the one pinned.
"""

from __future__ import annotations

import asyncio
import gc
import math
from collections.abc import Callable
from inspect import isawaitable
from typing import Any

from pulumi.runtime import proto
from pulumi_policy import policy as sdk
from pulumi_policy.deserialize import SPECIAL_SIG_KEY, _deserialize_property
from pulumi_policy.proxy import UnknownValueError, _DictProxy, _ListProxy, _proxy_helper
from pulumi_policy.version import VERSION as SDK_VERSION

from . import common

PINNED_SDK_VERSION = "1.21.0"
_BASE = sdk._PolicyAnalyzerServicer
_PRIVATE = "_PolicyAnalyzerServicer__"
PROVIDERS_KEPT = 64
"""Distinct providers kept across requests (a stack uses a few; more and the cache starts afresh)."""


class ServicerShapeError(RuntimeError):
    """The installed pulumi-policy is not the version this servicer was written against."""


def check_shape() -> None:
    if SDK_VERSION != PINNED_SDK_VERSION:
        raise ServicerShapeError(
            f"pulumi-policy {SDK_VERSION} is installed; policies/guardrails/servicer.py is written against "
            f"{PINNED_SDK_VERSION}"
        )


def reads(policy: Any, type_: str) -> bool:
    """Whether ``policy`` reads resources of ``type_`` (every type unless it declared its own)."""
    types = getattr(policy, "resource_types", None)
    if types is None:
        return True
    return bool(types(type_)) if callable(types) else type_ in types


def _value(value: Any, path: list[str], key: str) -> Any:
    """One ``google.protobuf.Value`` as the SDK hands it to a rule (see ``properties``), found under ``key`` of
    ``path`` (an object's or list's own path is made only for an object or a list: a scalar carries none)."""
    which = value.WhichOneof("kind")
    if which == "string_value":
        return value.string_value
    if which == "struct_value":
        return _fields(value.struct_value.fields, [*path, key])
    if which == "list_value":
        inner = [*path, key]
        return _ListProxy([_value(x, inner, str(i)) for i, x in enumerate(value.list_value.values)], inner)
    return _scalar(value, which)


def _scalar(value: Any, which: str | None) -> Any:
    if which == "bool_value":
        return value.bool_value
    if which == "number_value":
        number = value.number_value
        if math.isinf(number):
            raise ValueError("Fail to serialize Infinity for Value.number_value, which would parse as string_value")
        if math.isnan(number):
            raise ValueError("Fail to serialize NaN for Value.number_value, which would parse as string_value")
        return number
    return None  # null_value, or no value at all


def _fields(fields: Any, path: list[str]) -> Any:
    if SPECIAL_SIG_KEY in fields:  # an asset, archive or secret: the SDK's own reading of the plain object
        return _special(fields, path)
    return _DictProxy({key: _value(fields[key], path, key) for key in fields}, path)


def _special(fields: Any, path: list[str]) -> Any:
    plain = {key: _plain_value(fields[key]) for key in fields}
    return _proxy_helper(_deserialize_property(plain), path)


def _plain_value(value: Any) -> Any:
    which = value.WhichOneof("kind")
    if which == "struct_value":
        return {key: _plain_value(x) for key, x in value.struct_value.fields.items()}
    if which == "list_value":
        return [_plain_value(x) for x in value.list_value.values]
    return _value(value, [], "")


def properties(struct: Any) -> Any:
    """A ``Struct`` of properties as the SDK hands them to a rule, in one pass:
    ``unknown_checking_proxy(deserialize_properties(json_format.MessageToDict(struct)))`` (pulumi-policy 1.21.0,
    protobuf's ``json_format``): numbers stay floats (infinity and NaN refused alike), null is None, each object and
    list is the SDK's unknown-checking proxy carrying its path, and an object with Pulumi's signature key (asset,
    archive, secret) is read by the SDK's own deserializer. ``tests/policies/test_servicer_speed.py`` compares the
    two on every example stack and on hand-made values."""
    fields = struct.fields
    return _DictProxy({key: _value(fields[key], [], key) for key in fields}, [])


def properties_and_plain(struct: Any) -> tuple[Any, dict[str, Any]]:
    """``properties(struct)`` and, from the same pass, ``common.plain`` of it (what a stack rule reads through
    ``common.registered``): each object and list built twice over, not read back through its proxies."""
    return _both_fields(struct.fields, [])


def _both_fields(fields: Any, path: list[str]) -> tuple[Any, Any]:
    if SPECIAL_SIG_KEY in fields:
        proxied = _special(fields, path)
        return proxied, common.plain_element(proxied)
    target: dict[str, Any] = {}
    flat: dict[str, Any] = {}
    for key in fields:
        value = fields[key]
        which = value.WhichOneof("kind")
        if which == "string_value":
            target[key] = text = value.string_value
            flat[key] = common.UNKNOWN if text in _SENTINELS else text
        elif which == "struct_value":
            target[key], flat[key] = _both_fields(value.struct_value.fields, [*path, key])
        elif which == "list_value":
            target[key], flat[key] = _both_items(value.list_value.values, [*path, key])
        else:
            target[key] = flat[key] = _scalar(value, which)
    return _DictProxy(target, path), flat


def _both_items(values: Any, path: list[str]) -> tuple[Any, Any]:
    target: list[Any] = []
    flat: list[Any] = []
    for i, value in enumerate(values):
        which = value.WhichOneof("kind")
        if which == "string_value":
            text = value.string_value
            target.append(text)
            flat.append(common.UNKNOWN if text in _SENTINELS else text)
        elif which == "struct_value" or which == "list_value":
            inner = [*path, str(i)]
            proxied, plain = (_both_fields(value.struct_value.fields, inner) if which == "struct_value"
                              else _both_items(value.list_value.values, inner))
            target.append(proxied)
            flat.append(plain)
        else:
            scalar = _scalar(value, which)
            target.append(scalar)
            flat.append(scalar)
    return _ListProxy(target, path), flat


_SENTINELS = common._SENTINELS


def _run(policy: Any, args: Any, report: Callable[..., None]) -> None:
    result = policy.validate(args, report)
    if isawaitable(result):
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(asyncio.Task(result, loop=loop))
        finally:
            loop.close()


class SharedConversionServicer(_BASE):
    """``_PolicyAnalyzerServicer`` converting each resource once per request (see the module docstring)."""

    def __init__(self, name: str, version: str, policies: list, enforcement_level: Any, initial_config: Any = None,
                 description: str | None = None, display_name: str | None = None, readme: str | None = None,
                 provider: str | None = None, tags: list[str] | None = None, repository: str | None = None) -> None:
        check_shape()
        super().__init__(name, version, policies, enforcement_level, initial_config, description, display_name,
                         readme, provider, tags, repository)
        self._plans: dict[Any, Any] = {}
        self._providers: dict[tuple[str, str, str, bytes], Any] = {}

    def Configure(self, request: Any, context: Any) -> Any:  # noqa: N802 (the protocol's name)
        self._plans.clear()
        self._providers.clear()
        return super().Configure(request, context)

    def _private(self, name: str) -> Any:
        return getattr(self, _PRIVATE + name)

    def _planned(self, key: Any, build: Callable[[], Any]) -> Any:
        """What depends only on the policies and their configured levels, built once per ``Configure`` (the
        levels change only there; the SDK recomputes them for every request and policy)."""
        levels = self._private("policy_pack_config_enforcement_level")
        full = (id(levels), key)
        found = self._plans.get(full)
        if found is None or found[0] is not levels:
            found = self._plans[full] = (levels, build())
        return found[1]

    def _enabled(self, kind: type) -> list[tuple[Any, Any]]:
        """The policies of ``kind`` that are not disabled, with the level their violations are reported at:
        remediate reports as mandatory, as the SDK does for both kinds of request."""
        return self._planned(("enabled", kind), lambda: self._choose(kind))

    def _resource_plan(self, type_: str) -> list[tuple[Any, Any, bool]]:
        """For a resource of ``type_``: each enabled resource policy that answers, in the pack's order, with its
        level and whether it runs (False: "does not implement validate", reported for every resource)."""
        def build() -> list[tuple[Any, Any, bool]]:
            plan = []
            for policy, level in self._enabled(sdk.ResourceValidationPolicy):
                if not policy.has_validation():
                    plan.append((policy, level, False))
                elif reads(policy, type_):
                    plan.append((policy, level, True))
            return plan
        return self._planned(("resource", type_), build)

    def _stack_readers(self, type_: str) -> tuple[bool, ...]:
        """For each enabled stack policy, in order, whether it reads resources of ``type_``."""
        return self._planned(("stack", type_), lambda: tuple(
            reads(policy, type_) for policy, _ in self._enabled(sdk.StackValidationPolicy)))

    def _choose(self, kind: type) -> list[tuple[Any, Any]]:
        chosen = []
        for policy in self._private("policies"):
            level = self._get_enforcement_level(policy)
            if level == sdk.EnforcementLevel.DISABLED or not isinstance(policy, kind):
                continue
            if level == sdk.EnforcementLevel.REMEDIATE:
                level = sdk.EnforcementLevel.MANDATORY
            chosen.append((policy, level))
        return chosen

    def _guarded(self, response: Any, policy: Any, run: Callable[[], None]) -> None:
        """Run one policy, reporting unknown values and "not applicable" exactly as the SDK does."""
        try:
            run()
        except UnknownValueError as exc:
            name, version = self._private("policy_pack_name"), self._private("policy_pack_version")
            response.diagnostics.append(proto.AnalyzeDiagnostic(
                policyName=policy.name,
                policyPackName=name,
                policyPackVersion=version,
                message=f"can't run policy '{policy.name}' from policy pack '{name}@v{version}' during preview: "
                        f"{exc.message}",
                urn="",
                description=policy.description,
                enforcementLevel=self._map_enforcement_level(sdk.EnforcementLevel.ADVISORY),
            ))
        except sdk._NotApplicableError as exc:
            response.not_applicable.append(proto.PolicyNotApplicable(policy_name=policy.name, reason=exc.reason or ""))

    def Analyze(self, request: Any, _context: Any) -> Any:  # noqa: N802 (the protocol's name)
        with common.one_request():
            return self._analyze(request)

    def AnalyzeStack(self, request: Any, _context: Any) -> Any:  # noqa: N802 (the protocol's name)
        with common.one_request():
            return self._analyze_stack(request)

    def _analyze(self, request: Any) -> Any:
        self._configure_runtime_settings()
        response = proto.AnalyzeResponse()
        props = options = provider = None
        for policy, level, runs in self._resource_plan(request.type):
            if not runs:
                response.not_applicable.append(proto.PolicyNotApplicable(
                    policy_name=policy.name, reason="Policy does not implement validate"))
                continue
            if props is None:
                props = properties(request.properties)
                options, provider = self._get_resource_options(request), self._get_provider_resource(request)
            report = self._create_report_violation(response, policy.name, policy.description, level, policy.severity)
            args = sdk.ResourceValidationArgs(
                request.type, props, request.urn, request.name, options, provider,
                self._get_policy_config(policy.name), self._private("stack_tags"),
            )
            self._guarded(response, policy, lambda p=policy, a=args, r=report: _run(p, a, r))
        return response

    def _analyze_stack(self, request: Any) -> Any:
        self._configure_runtime_settings()
        response = proto.AnalyzeResponse()
        policies = self._enabled(sdk.StackValidationPolicy)
        if not policies:
            return response
        resources = self._stack_resources(request)
        readers = [self._stack_readers(r.resource_type) for r in resources]
        for i, (policy, level) in enumerate(policies):
            report = self._create_report_violation(response, policy.name, policy.description, level, policy.severity)
            mine = [r for r, read in zip(resources, readers, strict=True) if read[i]]
            args = sdk.StackValidationArgs(mine, self._get_policy_config(policy.name), self._private("stack_tags"))
            self._guarded(response, policy, lambda p=policy, a=args, r=report: _run(p, a, r))
        return response

    def _get_provider_resource(self, request: Any) -> Any:
        """The SDK's provider resource, built once for each distinct provider (every resource of a stack names one of
        a few, and the SDK converts it again for each resource): kept across requests, as one ``Analyze`` request
        carries one resource, keyed by the provider's type, URN, name and the bytes of its properties, so equal keys
        are equal readings. Rules only read it (the properties are the SDK's read-only proxies)."""
        if not request.HasField("provider"):
            return None
        prov = request.provider
        key = (prov.type, prov.urn, prov.name, prov.properties.SerializeToString(deterministic=True))
        found = self._providers.get(key)
        if found is None:
            if len(self._providers) >= PROVIDERS_KEPT:
                self._providers.clear()
            found = self._providers[key] = super()._get_provider_resource(request)
        return found

    def _stack_resources(self, request: Any) -> list[Any]:
        """Every resource of the request as a ``PolicyResource``, converted once, with its parent, dependencies
        and property dependencies linked to the other resources as the SDK links them."""
        resources = []
        by_urn: dict[str, Any] = {}
        links = []
        for r in request.resources:
            props, flat = properties_and_plain(r.properties)
            common.remember_plain(props, flat)
            resource = sdk.PolicyResource(r.type, props, r.urn, r.name, self._get_resource_options(r),
                                          self._get_provider_resource(r), None, [], {})
            resources.append(resource)
            by_urn[resource.urn] = resource
            links.append((resource, r.parent, list(r.dependencies),
                          {k: list(v.urns) for k, v in r.propertyDependencies.items()}))
        for resource, parent, dependencies, property_dependencies in links:
            if parent is not None and parent in by_urn:
                resource.parent = by_urn[parent]
            resource.dependencies.extend(by_urn[d] for d in dependencies if d in by_urn)
            for key, urns in property_dependencies.items():
                resource.property_dependencies[key] = [by_urn[d] for d in urns if d in by_urn]
        return resources


class ServedServicer(SharedConversionServicer):
    """The servicer ``policies/__main__.py`` serves: ``SharedConversionServicer`` with the cyclic collector kept off
    what the process holds for good.

    A pack process serves one ``pulumi preview`` / ``pulumi up`` and exits. Everything it holds before the first
    request (interpreter, pulumi, grpc, protobuf, the rules: some 42,000 tracked objects) and what the first stack
    adds (the modules the rules import on first use, their first-use caches) stays alive until then, yet every full
    collection walked it again (a quarter of the servicer's CPU per analysis, measured in one process). It is
    frozen (``gc.freeze``) once the servicer is built and once more after the first ``AnalyzeStack``, after one
    collection, so no garbage of that request is frozen. The collector still runs and frees what requests leave in cycles; answers are unchanged.
    ``gpulease plan`` keeps ``SharedConversionServicer`` (it pauses the collector per analysis instead)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._settled = False
        gc.freeze()

    def AnalyzeStack(self, request: Any, context: Any) -> Any:  # noqa: N802 (the protocol's name)
        response = super().AnalyzeStack(request, context)
        if not self._settled:
            self._settled = True
            gc.collect()
            gc.freeze()
        return response
