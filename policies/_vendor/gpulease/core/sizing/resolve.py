"""The spec's ``gpu`` section, and the one instance type it comes to in a region.

An explicit type is looked up (and its GPU count checked); requirements (``gpuMemoryGb``, ``count``, ``model``) pick
the cheapest type that meets them in that region; ``fit`` sizes the workload and picks the cheapest type that holds
it. The program resolves each experiment's section once, before the first lookup, and carries the result.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field, model_validator

from gpulease.core import vocabulary as v
from gpulease.core.catalog.loader import OVERRIDES_ENV, CatalogError, load_catalog
from gpulease.core.catalog.models import Catalog, InstanceType
from gpulease.core.model import SpecModel
from gpulease.core.sizing.estimate import estimate
from gpulease.core.sizing.offers import find_offers
from gpulease.core.sizing.workload import FitSpec


def _given(field: str) -> dict:
    return {"required": [field], "properties": {field: {"not": {"type": "null"}}}}


class GpuSpec(SpecModel):
    """Either an explicit instance type, or requirements resolved through the catalog."""

    # _one_way, for the JSON Schema: exactly one of the three ways.
    model_config = ConfigDict(json_schema_extra={"oneOf": [
        _given("instanceType"), {"anyOf": [_given("gpuMemoryGb"), _given("model")]}, _given("fit")]})

    instance_type: str | None = Field(None, description="An explicit instance type, e.g. g5.xlarge or ecs.gn7i-c8g1.2xlarge.")
    gpu_memory_gb: float | None = Field(None, gt=0, description="Memory per GPU, at least this many GB.")
    count: int = Field(1, ge=1, le=16, description="Number of GPUs.")
    model: str | None = Field(None, description="GPU model, e.g. A10G, L4, A100, H100, T4.")
    fit: FitSpec | None = Field(
        None,
        description="Workload to size for, e.g. {params: 7B, method: lora, seqLen: 2048, batch: 4}; "
        "resolved to the cheapest instance type in the region whose GPUs hold it.",
    )

    @model_validator(mode="after")
    def _one_way(self) -> GpuSpec:
        ways = [self.instance_type is not None, self.gpu_memory_gb is not None or self.model is not None, self.fit is not None]
        if sum(ways) != 1:
            raise ValueError(
                "give exactly one of instanceType, requirements ({gpuMemoryGb, count, model}) or fit; "
                "accepted: {instanceType: g5.xlarge} or {gpuMemoryGb: 24, count: 1} or {fit: {params: 7B, method: lora}}"
            )
        if self.instance_type is not None and not v.is_gpu_instance_type(self.instance_type):
            raise ValueError(
                f"instanceType {self.instance_type!r} carries no GPU; accepted: a GPU type such as g5.xlarge, "
                "g6e.xlarge, p4de.24xlarge or ecs.gn7i-c8g1.2xlarge"
            )
        return self

    @property
    def explicit_count(self) -> int | None:
        """``count`` when the section gives it, else None (requirements default to one GPU; a fit to any count)."""
        return self.count if "count" in self.model_fields_set else None


def _known(catalog: Catalog, cloud: str) -> str:
    return ", ".join(sorted(it.type for it in catalog.instances if it.cloud == cloud))


def resolve_instance_type(cloud: str, region: str, gpu: GpuSpec, nodes: int = 1) -> InstanceType:
    """The instance type for a spec's ``gpu`` section in ``region``; ``CatalogError`` names the field. ``gpu`` describes
    one node: a ``fit`` of a cluster (``nodes`` above one) is sharded over every node's GPUs."""
    catalog = load_catalog()
    if gpu.instance_type is not None:
        known = catalog.get(cloud, gpu.instance_type)
        if known is None:
            raise CatalogError(
                f"{gpu.instance_type!r} is not in the {cloud} catalog; known: {_known(catalog, cloud)}. "
                f"Add it with an override file ({OVERRIDES_ENV})",
                field="gpu.instanceType",
            )
        if gpu.explicit_count is not None and known.gpu_count != gpu.count:
            raise CatalogError(
                f"{gpu.instance_type} has {known.gpu_count} GPU(s), not {gpu.count}; accepted: {known.gpu_count} or leave "
                "count out",
                field="gpu.count",
            )
        return known
    if gpu.fit is not None:
        return _resolve_fit(catalog, cloud, region, gpu.fit, gpu.explicit_count, gpu.model, nodes)
    memory, model, count = gpu.gpu_memory_gb, gpu.model, gpu.count
    offers = catalog.offers(cloud, region, gpu_memory_gb=memory, count=count, model=model)
    if not offers:
        want = f"{count} x GPU" + (f" {model}" if model else "") + (f" with >= {memory:g} GB" if memory else "")
        raise CatalogError(f"no {cloud} instance type in {region} offers {want}{_region_hint(catalog, cloud, region)}", field="gpu")
    return offers[0]


def _region_hint(catalog: Catalog, cloud: str, region: str) -> str:
    regions = catalog.regions_of(cloud)
    if region in regions:
        return ""
    return f"; the catalog prices {cloud} in: {', '.join(regions)} (add {region} with an override file, {OVERRIDES_ENV})"


def _resolve_fit(
    catalog: Catalog, cloud: str, region: str, fit: FitSpec, count: int | None, model: str | None, nodes: int = 1
) -> InstanceType:
    workload, headroom = fit.workload(), fit.headroom
    gpus = fit.gpus or count
    offers = find_offers(workload, catalog, cloud, region, gpus=gpus, headroom=headroom, model=model, nodes=nodes)
    if not offers:
        need = estimate(workload, (gpus or 1) * nodes).total_gb
        on = f"{gpus} GPU(s)" if gpus else "one GPU"
        on += f" on each of {nodes} nodes" if nodes > 1 else ""
        raise CatalogError(
            f"no {cloud} instance type in {region} holds {workload.describe()} "
            f"(about {need:.1f} GB per GPU on {on}, plus {headroom:.0%} headroom){_region_hint(catalog, cloud, region)}; "
            "try method lora/qlora, gradCheckpointing: true, a smaller batch, or more GPUs",
            field="gpu.fit",
        )
    return offers[0].instance
