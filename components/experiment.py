"""The cloud-neutral facade: one call turns a validated ``StackSpec`` into the cloud's component."""

from __future__ import annotations

import importlib

import pulumi

from components.spec.load import SpecError, StackSpec
from gpulease.core.catalog import CatalogError
from gpulease.core.sizing.resolve import resolve_instance_type

# cloud -> (module, component class, provider config namespace)
CLOUDS: dict[str, tuple[str, str]] = {
    "aws": ("components.aws.experiment", "AwsGpuExperiment"),
    "alicloud": ("components.alicloud.experiment", "AlicloudGpuExperiment"),
}


def stack_region(spec: StackSpec) -> str:
    """The spec's region, else the provider's region config; one of them is required."""
    region = spec.base.region or pulumi.Config(spec.cloud).get("region")
    if not region:
        field = "gpulease:sweep.base.region" if spec.kind == "sweep" else "gpulease:experiment.region"
        raise SpecError(spec.stack, [(field, f"no region: set it here or as {spec.cloud}:region in the stack config")])
    return region


def _explicit_provider(spec: StackSpec, region: str) -> pulumi.ProviderResource | None:
    if pulumi.Config(spec.cloud).get("region") == region:
        return None
    module = importlib.import_module(f"pulumi_{spec.cloud}")
    return module.Provider(f"{spec.cloud}-{region}", region=region)


def check_instance_types(spec: StackSpec, region: str) -> None:
    """Resolve every experiment's GPU through the catalog first, so a type that does not exist or a workload that
    fits nowhere is reported like any other config mistake (stack, field path, what is accepted)."""
    problems: list[tuple[str, str]] = []
    for i, exp in enumerate(spec.experiments):
        prefix = "gpulease:experiment" if spec.kind == "experiment" else f"gpulease:sweep.runs[{i}]"
        try:
            resolve_instance_type(spec.cloud, region, exp.gpu)
        except CatalogError as exc:
            problems.append((f"{prefix}.{exc.field or 'gpu'}", exc.detail))
    if problems:
        raise SpecError(spec.stack, problems)


def GpuExperiment(spec: StackSpec) -> pulumi.ComponentResource:  # noqa: N802 - reads as the component it returns
    """Create ``gpulease:<cloud>:GpuExperiment`` for the stack."""
    region = stack_region(spec)
    check_instance_types(spec, region)
    module_name, class_name = CLOUDS[spec.cloud]
    component = getattr(importlib.import_module(module_name), class_name)
    name = spec.sweep_name or spec.base.name
    provider = _explicit_provider(spec, region)
    # Lookups first (a module-level ``prepare``), so that a bad type or zone registers nothing.
    prepare = getattr(importlib.import_module(module_name), "prepare", None)
    if prepare is None:
        return component(name, spec, region, provider=provider)
    return component(name, spec, region, provider=provider, plan=prepare(spec, region, provider))
