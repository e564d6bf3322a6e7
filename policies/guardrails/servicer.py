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
from collections.abc import Callable
from inspect import isawaitable
from typing import Any

from google.protobuf import json_format
from pulumi.runtime import proto
from pulumi_policy import policy as sdk
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy
from pulumi_policy.version import VERSION as SDK_VERSION

from . import common

PINNED_SDK_VERSION = "1.21.0"
_BASE = sdk._PolicyAnalyzerServicer
_PRIVATE = "_PolicyAnalyzerServicer__"


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

    def _private(self, name: str) -> Any:
        return getattr(self, _PRIVATE + name)

    def _enabled(self, kind: type) -> list[tuple[Any, Any]]:
        """The policies of ``kind`` that are not disabled, with the level their violations are reported at:
        remediate reports as mandatory, as the SDK does for both kinds of request."""
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
        props = None
        for policy, level in self._enabled(sdk.ResourceValidationPolicy):
            if not policy.has_validation():
                response.not_applicable.append(proto.PolicyNotApplicable(
                    policy_name=policy.name, reason="Policy does not implement validate"))
                continue
            if not reads(policy, request.type):
                continue
            if props is None:
                props = unknown_checking_proxy(deserialize_properties(json_format.MessageToDict(request.properties)))
            report = self._create_report_violation(response, policy.name, policy.description, level, policy.severity)
            args = sdk.ResourceValidationArgs(
                request.type, props, request.urn, request.name, self._get_resource_options(request),
                self._get_provider_resource(request), self._get_policy_config(policy.name),
                self._private("stack_tags"),
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
        for policy, level in policies:
            report = self._create_report_violation(response, policy.name, policy.description, level, policy.severity)
            mine = [r for r in resources if reads(policy, r.resource_type)]
            args = sdk.StackValidationArgs(mine, self._get_policy_config(policy.name), self._private("stack_tags"))
            self._guarded(response, policy, lambda p=policy, a=args, r=report: _run(p, a, r))
        return response

    def _get_provider_resource(self, request: Any) -> Any:
        """The SDK's provider resource, built once per request for each distinct provider (every resource of a stack
        names one of a few, and the SDK converts it again for each resource)."""
        if not request.HasField("provider"):
            return None
        prov = request.provider
        key = (prov.type, prov.urn, prov.name, prov.properties.SerializeToString(deterministic=True))
        return common.memoized_by("provider", key, lambda: super(SharedConversionServicer, self)._get_provider_resource(
            request))

    def _stack_resources(self, request: Any) -> list[Any]:
        """Every resource of the request as a ``PolicyResource``, converted once, with its parent, dependencies
        and property dependencies linked to the other resources as the SDK links them."""
        resources = []
        by_urn: dict[str, Any] = {}
        links = []
        for r in request.resources:
            props = unknown_checking_proxy(deserialize_properties(json_format.MessageToDict(r.properties)))
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
