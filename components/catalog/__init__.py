"""The instance catalog: GPU instance types with their GPUs and prices, loaded from dated data files.

``resolve_instance_type`` turns the spec's ``gpu`` section into one instance type for the stack's region:
an explicit type is looked up (and its GPU count checked); requirements (``gpuMemoryGb``, ``count``, ``model``)
pick the cheapest type that meets them in that region; ``fit`` sizes the workload with ``components.sizing`` and
picks the cheapest type that holds it.
"""

from __future__ import annotations

from components.catalog.loader import DATA_DIR, OVERRIDES_ENV, CatalogError, load_catalog
from components.catalog.models import HOURS_PER_MONTH, Catalog, InstanceType, RegionPrices, Source

__all__ = [
    "DATA_DIR",
    "HOURS_PER_MONTH",
    "OVERRIDES_ENV",
    "Catalog",
    "CatalogError",
    "InstanceType",
    "RegionPrices",
    "Source",
    "load_catalog",
    "resolve_instance_type",
]


def _known(catalog: Catalog, cloud: str) -> str:
    return ", ".join(sorted(it.type for it in catalog.instances if it.cloud == cloud))


def resolve_instance_type(cloud: str, region: str, gpu: object) -> InstanceType:
    """The instance type for a spec's ``gpu`` section (``components.spec.GpuSpec``) in ``region``."""
    catalog = load_catalog()
    explicit_count = "count" in (getattr(gpu, "model_fields_set", None) or ())
    count = getattr(gpu, "count", 1)
    instance_type = getattr(gpu, "instance_type", None)
    if instance_type is not None:
        known = catalog.get(cloud, instance_type)
        if known is None:
            raise CatalogError(
                f"{instance_type!r} is not in the {cloud} catalog; known: {_known(catalog, cloud)}. "
                f"Add it with an override file ({OVERRIDES_ENV})",
                field="gpu.instanceType",
            )
        if explicit_count and known.gpu_count != count:
            raise CatalogError(
                f"{instance_type} has {known.gpu_count} GPU(s), not {count}; accepted: {known.gpu_count} or leave count out",
                field="gpu.count",
            )
        return known
    fit = getattr(gpu, "fit", None)
    if fit is not None:
        return _resolve_fit(catalog, cloud, region, fit, count if explicit_count else None, getattr(gpu, "model", None))
    memory = getattr(gpu, "gpu_memory_gb", None)
    model = getattr(gpu, "model", None)
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
    catalog: Catalog, cloud: str, region: str, fit: object, count: int | None, model: str | None
) -> InstanceType:
    from components.sizing import find_offers, workload_from_fit

    workload, gpus, headroom = workload_from_fit(fit)
    gpus = gpus or count
    offers = find_offers(workload, catalog, cloud, region, gpus=gpus, headroom=headroom, model=model)
    if not offers:
        from components.sizing import estimate

        need = estimate(workload, gpus or 1).total_gb
        on = f"{gpus} GPU(s)" if gpus else "one GPU"
        raise CatalogError(
            f"no {cloud} instance type in {region} holds {workload.describe()} "
            f"(about {need:.1f} GB per GPU on {on}, plus {headroom:.0%} headroom){_region_hint(catalog, cloud, region)}; "
            "try method lora/qlora, gradCheckpointing: true, a smaller batch, or more GPUs",
            field="gpu.fit",
        )
    return offers[0].instance
