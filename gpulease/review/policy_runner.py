"""Run the policy pack over a rendering through ``pulumi_policy``'s own analyzer code, in-process.

``pulumi preview --policy-pack`` starts the pack as a gRPC analyzer server and calls ``GetAnalyzerInfo``,
``Configure`` (the resolved ``--policy-pack-config``), ``ConfigureStack``, then ``Analyze`` for each resource
(its inputs) and ``AnalyzeStack`` once (every resource's outputs, parents and dependencies). This module makes
exactly those calls on the SDK's servicer object, without the server, so enforcement levels, policy config,
"not applicable" results and unknown values ("can't run policy ... during preview") behave as under the CLI.

``PolicyPack`` builds that servicer inside its constructor and then blocks serving it, so the servicer class
(``pulumi_policy.policy._PolicyAnalyzerServicer``) is used directly: a private API of the pinned
``pulumi-policy`` version, confined to this module and checked by ``check_sdk_shape`` (and its test) so that an
SDK change fails loudly instead of silently skipping policies.

What the CLI does around the server is reproduced here too: config resolution (schema defaults, the pack's
levels, ``all``, per-policy levels and properties, JSON Schema validation of properties) and one offline-only
check the analyzer protocol cannot carry (``retainOnDelete`` against the ``gpulease:retain`` tag), whose rule
lives in the pack (``policies.guardrails.storage.retention_option_problem``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from google.protobuf import json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import EnforcementLevel, Policy, ResourceValidationPolicy, StackValidationPolicy
from pulumi_policy import policy as sdk_policy
from pulumi_policy.version import VERSION as SDK_VERSION

from gpulease.core import clock, inputfile
from gpulease.core.errors import UserError
from gpulease.review.render import CapturedResource, Rendering
from gpulease.review.sdk_speed import collector_paused
from gpulease.review.stack_view import StackRequest, StackResource
from policies.guardrails import pack, storage
from policies.guardrails.servicer import SharedConversionServicer, reads

PINNED_SDK_VERSION = "1.21.0"
PACK_VERSION = "0.1.0"
SERVICER_PARAMETERS = (
    "self", "name", "version", "policies", "enforcement_level", "initial_config", "description", "display_name",
    "readme", "provider", "tags", "repository",
)
SERVICER_METHODS = ("GetAnalyzerInfo", "Configure", "ConfigureStack", "Analyze", "AnalyzeStack")
LEVEL_NAMES = {
    analyzer_pb2.ADVISORY: "advisory",
    analyzer_pb2.MANDATORY: "mandatory",
    analyzer_pb2.REMEDIATE: "remediate",
    analyzer_pb2.DISABLED: "disabled",
}
LEVEL_VALUES = {name: value for value, name in LEVEL_NAMES.items()}


POLICY_CONFIG_MAX_BYTES = 256 * 1024
"""A policy config names a dozen policies; anything near this size is not one."""


class PolicyConfigError(UserError):
    """A policy config file that the CLI would refuse."""


class SdkShapeError(RuntimeError):
    """The installed pulumi-policy no longer has the shape this module drives."""


def check_sdk_shape() -> type:
    """The analyzer servicer class, after checking it is the one this module was written against."""
    servicer = getattr(sdk_policy, "_PolicyAnalyzerServicer", None)
    if servicer is None:
        raise SdkShapeError("pulumi_policy.policy._PolicyAnalyzerServicer is gone; update gpulease/review/policy_runner.py")
    params = tuple(inspect.signature(servicer.__init__).parameters)
    if params != SERVICER_PARAMETERS:
        raise SdkShapeError(f"_PolicyAnalyzerServicer.__init__ takes {params}, expected {SERVICER_PARAMETERS}")
    missing = [m for m in SERVICER_METHODS if not callable(getattr(servicer, m, None))]
    if missing:
        raise SdkShapeError(f"_PolicyAnalyzerServicer lacks {missing}")
    if SDK_VERSION != PINNED_SDK_VERSION:
        raise SdkShapeError(f"pulumi-policy {SDK_VERSION} is installed; this runner is pinned to {PINNED_SDK_VERSION}")
    return servicer


@dataclass
class Violation:
    policy: str
    level: str
    message: str
    urn: str | None
    resource_type: str | None = None
    resource_name: str | None = None
    stage: str = "resource"  # resource (Analyze), stack (AnalyzeStack) or offline (plan-only check)

    @property
    def detail(self) -> str:
        """The message without the policy description the SDK puts on its first line."""
        head, _, rest = self.message.partition("\n")
        return rest or head


@dataclass
class PolicyResult:
    """The pack's verdict on one rendering."""

    violations: list[Violation] = field(default_factory=list)
    not_applicable: list[tuple[str, str, str]] = field(default_factory=list)  # (policy, urn, reason)
    levels: dict[str, str] = field(default_factory=dict)

    @property
    def mandatory(self) -> list[Violation]:
        return [x for x in self.violations if x.level in ("mandatory", "remediate")]

    @property
    def advisory(self) -> list[Violation]:
        return [x for x in self.violations if x.level == "advisory"]


def load_policy_config(path: Path) -> dict[str, Any]:
    """A ``--policy-pack-config`` JSON file: ``{"all": level, "<policy>": level | {enforcementLevel, ...}}``."""
    try:
        data = inputfile.load_json(path, what="policy config file", max_bytes=POLICY_CONFIG_MAX_BYTES)
    except inputfile.InputFileError as exc:
        raise PolicyConfigError(f"policy config {exc}") from None
    if not isinstance(data, dict):
        raise PolicyConfigError(f"policy config {path}: the top level must be an object of policy names")
    return data


class PolicyRunner:
    """One configured analyzer for the pack; ``analyze`` may be called for many renderings."""

    def __init__(
        self,
        policies: list[Policy] | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        pack_name: str | None = None,
        pack_enforcement: EnforcementLevel | None = None,
        servicer_class: type | None = None,
        narrow: bool = True,
    ):
        """``servicer_class`` defaults to the pack's own (``policies.guardrails.servicer``). With the SDK's servicer
        (``check_sdk_shape()``) and ``narrow=False`` every resource reaches every rule, as under ``pulumi preview``
        with a pack built on the SDK alone: the same verdicts, more slowly, which the tests compare."""
        sdk_servicer = check_sdk_shape()
        self._servicer_class = servicer_class or SharedConversionServicer
        if not issubclass(self._servicer_class, sdk_servicer):
            raise SdkShapeError(f"{self._servicer_class.__name__} is not an analyzer servicer of pulumi-policy")
        self.policies = policies if policies is not None else pack.all_policies()
        self.pack_name = pack_name or pack.PACK_NAME
        self._enforcement = pack_enforcement or pack.PACK_ENFORCEMENT
        self._description = (pack.PACK_DESCRIPTION, pack.PACK_DISPLAY_NAME)
        self.servicer = self._servicer_class(
            self.pack_name, PACK_VERSION, self.policies, self._enforcement, None, *self._description, None, None, None,
            None,
        )
        self.info = self.servicer.GetAnalyzerInfo(None, None)
        self.levels, self.properties = resolve_config(self.info, config or {})
        self._configure = analyzer_pb2.ConfigureAnalyzerRequest()
        for name, lvl in self.levels.items():
            entry = self._configure.policyConfig[name]
            entry.enforcementLevel = LEVEL_VALUES[lvl]
            entry.properties.update(self.properties.get(name, {}))
        self.servicer.Configure(self._configure, None)
        resource_rules = [p for p in self.policies if isinstance(p, ResourceValidationPolicy)]
        stack_rules = [p for p in self.policies if isinstance(p, StackValidationPolicy)]
        everything = not narrow
        self._judged_types = functools.cache(lambda t: everything or any(reads(p, t) for p in resource_rules))
        self._stack_reads = functools.cache(lambda t: everything or any(reads(p, t) for p in stack_rules))

    def analyze(self, rendering: Rendering, now: datetime | None = None) -> PolicyResult:
        """Run every policy on ``rendering``; ``now`` fixes the policies' clock (default: the real time).

        The cyclic collector is paused meanwhile (``sdk_speed.collector_paused``): an analysis allocates in
        proportion to the rendering and frees it by reference counting, and a collection in its middle walked
        every captured resource and what the render left (a fifth of judging a 100-run sweep)."""
        with clock.frozen(now), collector_paused():
            return self._analyze(rendering)

    def _analyze(self, rendering: Rendering) -> PolicyResult:
        result = PolicyResult(levels=dict(self.levels))
        by_urn = {r.urn: r for r in rendering.resources}
        stack_config = analyzer_pb2.AnalyzerStackConfigureRequest(
            stack=rendering.stack, project=rendering.project, organization="organization", dry_run=True
        )
        self.servicer.ConfigureStack(stack_config, None)
        providers = _ProviderInfo(rendering)
        # The resource rules judge only the types they declare (common.judges): a resource no rule reads is not
        # sent, as the servicer would answer it with nothing.
        judged = self._judged_types
        stack_request = StackRequest([])
        for res in rendering.resources:
            if judged(res.type):
                request = analyzer_pb2.AnalyzeRequest(
                    type=res.type, urn=res.urn, name=res.name, options=_options(res), provider=providers.of(res)
                )
                request.properties.CopyFrom(_struct(res.input_struct, res.inputs))
                self._collect(self.servicer.Analyze(request, None), res.urn, by_urn, result, "resource")
            if self._stack_reads(res.type):
                stack_request.resources.append(StackResource(
                    res, _struct(res.output_struct, res.outputs), _options(res), providers.of(res)))
        self._collect(self.servicer.AnalyzeStack(stack_request, None), None, by_urn, result, "stack")
        self._retention_option_check(rendering, result)
        return result

    def _collect(self, response, default_urn, by_urn, result: PolicyResult, stage: str) -> None:
        for d in response.diagnostics:
            urn = d.urn or default_urn
            res = by_urn.get(urn) if urn else None
            result.violations.append(
                Violation(
                    policy=d.policyName,
                    level=LEVEL_NAMES.get(d.enforcementLevel, "advisory"),
                    message=d.message,
                    urn=urn,
                    resource_type=res.type if res else None,
                    resource_name=res.name if res else None,
                    stage=stage,
                )
            )
        for na in response.not_applicable:
            result.not_applicable.append((na.policy_name, default_urn or "", na.reason))

    def _retention_option_check(self, rendering: Rendering, result: PolicyResult) -> None:
        """The half of ``data-disk-retained`` the analyzer cannot see (``storage.retention_option_problem``)."""
        lvl = self.levels.get(storage.data_disk_retained.name)
        if lvl in (None, "disabled"):
            return
        description = storage.data_disk_retained.description
        for res in rendering.resources:
            problem = storage.retention_option_problem(
                res.type, res.name, res.inputs.get("tags") or {}, retain_on_delete=res.retain_on_delete,
                protect=res.protect,
            )
            if problem is not None:
                result.violations.append(
                    Violation(
                        policy=storage.data_disk_retained.name,
                        level="mandatory" if lvl == "remediate" else lvl,
                        message=f"{description}\n{problem}",
                        urn=res.urn,
                        resource_type=res.type,
                        resource_name=res.name,
                        stage="offline",
                    )
                )


def _stack_resource(res: CapturedResource, providers: _ProviderInfo, into: Any = None) -> analyzer_pb2.AnalyzerResource:
    """What ``AnalyzeStack`` gets for a resource: its outputs (the engine's final state), options, links; built in
    place at the end of ``into`` (a request's ``resources``) when given, which spares copying it there."""
    make = analyzer_pb2.AnalyzerResource if into is None else into.add
    return make(
        type=res.type,
        properties=_struct(res.output_struct, res.outputs),
        urn=res.urn,
        name=res.name,
        options=_options(res),
        provider=providers.of(res),
        parent=res.parent or "",
        dependencies=res.dependencies,
        propertyDependencies={
            k: analyzer_pb2.AnalyzerPropertyDependencies(urns=urns) for k, urns in res.property_dependencies.items()
        },
    )


def _struct(wire: Any, plain: Mapping[str, Any]) -> struct_pb2.Struct:
    if wire is not None:
        return wire
    out = struct_pb2.Struct()
    out.update(dict(plain))
    return out


def _options(res: CapturedResource) -> analyzer_pb2.AnalyzerResourceOptions:
    return analyzer_pb2.AnalyzerResourceOptions(
        protect=res.protect,
        ignoreChanges=res.ignore_changes,
        deleteBeforeReplace=res.delete_before_replace,
        deleteBeforeReplaceDefined=res.delete_before_replace,
        parent=res.parent or "",
    )


class _ProviderInfo:
    """The provider each resource uses: an explicit one from the rendering, else the package's default
    provider configured from the stack config (e.g. ``aws:region``), as the engine would report it."""

    def __init__(self, rendering: Rendering):
        self.rendering = rendering
        self.by_urn = {r.urn: r for r in rendering.resources}
        self.cache: dict[str, analyzer_pb2.AnalyzerProviderResource | None] = {}

    def of(self, res: CapturedResource) -> analyzer_pb2.AnalyzerProviderResource | None:
        key = res.provider or res.type.split(":")[0]
        if key not in self.cache:
            self.cache[key] = self._build(res)
        return self.cache[key]

    def _build(self, res: CapturedResource) -> analyzer_pb2.AnalyzerProviderResource | None:
        package = res.type.split(":")[0]
        if package in ("pulumi", "gpulease") or not res.custom:
            return None
        if res.provider:
            urn = res.provider.split("::", 4)
            urn_only = "::".join(urn[:4]) if len(urn) > 4 else res.provider
            explicit = self.by_urn.get(urn_only)
            if explicit is not None:
                return analyzer_pb2.AnalyzerProviderResource(
                    type=explicit.type, properties=_struct(explicit.input_struct, explicit.inputs),
                    urn=explicit.urn, name=explicit.name,
                )
        props = struct_pb2.Struct()
        for key, value in self.rendering.config.items():
            if key.startswith(f"{package}:"):
                props.update({key.split(":", 1)[1]: value})
        name = "default"
        urn = f"urn:pulumi:{self.rendering.stack}::{self.rendering.project}::pulumi:providers:{package}::{name}"
        return analyzer_pb2.AnalyzerProviderResource(type=f"pulumi:providers:{package}", properties=props, urn=urn,
                                                     name=name)


def resolve_config(info: Any, config: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """Each policy's enforcement level and properties, as the CLI resolves them before ``Configure``.

    Order: the policy's own level and its schema defaults, then ``all``, then the policy's own entry. Properties
    are validated against the policy's config schema; unknown policies and levels are refused."""
    levels: dict[str, str] = {}
    properties: dict[str, dict[str, Any]] = {}
    schemas: dict[str, dict[str, Any]] = {}
    for p in info.policies:
        levels[p.name] = LEVEL_NAMES[p.enforcementLevel]
        props = json_format.MessageToDict(p.configSchema.properties)
        # A misspelt key (requiredTag) is an error here; the protocol's schema cannot say so (docs/policies.md).
        schemas[p.name] = {"type": "object", "properties": props, "required": list(p.configSchema.required),
                           "additionalProperties": False}
        properties[p.name] = {k: spec["default"] for k, spec in props.items() if "default" in spec}
    known_levels = ", ".join(LEVEL_VALUES)

    def parse_level(where: str, value: Any) -> str:
        if not isinstance(value, str) or value not in LEVEL_VALUES:
            raise PolicyConfigError(f"policy config: {where}: {value!r} is not an enforcement level; accepted: "
                                    f"{known_levels}")
        return str(value)

    if "all" in config:
        everything = parse_level("all", config["all"])
        levels = dict.fromkeys(levels, everything)
    for name, entry in config.items():
        if name == "all":
            continue
        if name not in levels:
            raise PolicyConfigError(f"policy config: no policy {name!r} in the pack; known: {', '.join(levels)}")
        if isinstance(entry, str):
            levels[name] = parse_level(name, entry)
            continue
        if not isinstance(entry, Mapping):
            raise PolicyConfigError(f"policy config: {name}: expected a level or an object, got {entry!r}")
        entry = dict(entry)
        if "enforcementLevel" in entry:
            levels[name] = parse_level(f"{name}.enforcementLevel", entry.pop("enforcementLevel"))
        merged = {**properties[name], **entry}
        # Imported here, where a policy config gives properties: jsonschema is a tenth of plan's start-up otherwise.
        import jsonschema

        errors = sorted(jsonschema.Draft7Validator(schemas[name]).iter_errors(merged), key=lambda e: list(e.path))
        if errors:
            problems = "; ".join(f"{'.'.join(map(str, e.path)) or '(top)'}: {e.message}" for e in errors)
            raise PolicyConfigError(f"policy config: {name}: {problems}")
        properties[name] = merged
    return levels, properties


def analyze(
    renderings: Iterable[Rendering], config: Mapping[str, Any] | None = None, now: datetime | None = None
) -> list[PolicyResult]:
    """The pack's verdict on each rendering, with one configured analyzer."""
    runner = PolicyRunner(config=config)
    return [runner.analyze(r, now=now) for r in renderings]
