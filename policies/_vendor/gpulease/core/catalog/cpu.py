"""CPU instance types for the preparation phase: the shipped, dated ``cpu_instances.yaml``, and the cheapest type
with at least the vCPUs and memory a stack asks for.

A ``CpuInstanceType`` answers the questions the cost model asks of a GPU type (its on-demand price in a region
and the price's date), so a preparation instance is priced like any other; it has no spot figures (the
preparation instance runs on-demand)."""

from __future__ import annotations

from datetime import date
from functools import lru_cache
from pathlib import Path

from pydantic import Field, ValidationError

from gpulease.core import inputfile
from gpulease.core.catalog.loader import CatalogError
from gpulease.core.catalog.models import Cloud, Source, _Row

CPU_FILE = Path(__file__).parent / "cpu_instances.yaml"


class CpuInstanceType(_Row):
    """One CPU instance type: its host and its on-demand price per region."""

    cloud: Cloud
    type: str = Field(..., min_length=3)
    vcpu: int = Field(..., ge=1)
    ram_gb: float = Field(..., gt=0)
    prices: dict[str, float] = Field(..., min_length=1, description="On-demand USD per hour by region.")
    as_of: date
    source: str = Field(..., min_length=1)

    spot_discount: float = 0.0
    """No spot estimate: the preparation instance is on-demand (``quote`` reads this for spot only)."""

    def on_demand_price(self, region: str) -> float | None:
        return self.prices.get(region)

    def price_date(self, region: str) -> date:
        return self.as_of

    def spot_zone_prices(self, region: str) -> dict[str, float]:
        return {}

    def spot_price_date(self, zone: str) -> date:
        return self.as_of

    def describe(self) -> str:
        return f"{self.vcpu} vCPU, {self.ram_gb:g} GB, no GPU"


class CpuCatalog:
    def __init__(self, instances: list[CpuInstanceType], sources: dict[str, Source]):
        self.instances = instances
        self.sources = sources

    def get(self, cloud: str, instance_type: str) -> CpuInstanceType | None:
        return next((it for it in self.instances if it.cloud == cloud and it.type == instance_type), None)

    def cheapest(self, cloud: str, region: str, *, vcpus: int, memory_gb: float) -> CpuInstanceType:
        """The cheapest type with at least ``vcpus`` and ``memory_gb`` priced in ``region`` (ties: the smaller, then
        by name); ``CatalogError`` on the ``prep`` field when none is."""
        fits = [it for it in self.instances if it.cloud == cloud and region in it.prices and it.vcpu >= vcpus
                and it.ram_gb >= memory_gb]
        if not fits:
            priced = sorted({r for it in self.instances if it.cloud == cloud for r in it.prices})
            largest = max((it for it in self.instances if it.cloud == cloud and region in it.prices),
                          key=lambda it: (it.vcpu, it.ram_gb), default=None)
            what = (f"the largest in {region} is {largest.type} ({largest.describe()})" if largest
                    else f"CPU types are priced in {', '.join(priced) or 'no region'}")
            raise CatalogError(f"no {cloud} CPU type in the catalog has {vcpus} vCPUs and {memory_gb:g} GB in {region}; "
                               f"{what}; accepted: smaller prep.vcpus / prep.memoryGb", field="prep")
        return min(fits, key=lambda it: (it.prices[region], it.vcpu, it.ram_gb, it.type))


@lru_cache(maxsize=1)
def load_cpu_catalog() -> CpuCatalog:
    document = inputfile.load_package_yaml(CPU_FILE).data or {}
    try:
        sources = {str(k): Source.model_validate(v) for k, v in (document.get("sources") or {}).items()}
        rows = [CpuInstanceType.model_validate(row) for row in document.get("instances") or []]
    except ValidationError as exc:
        raise CatalogError(f"{CPU_FILE}: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from None
    unknown = sorted({r.source for r in rows} - set(sources))
    if unknown:
        raise CatalogError(f"{CPU_FILE}: sources {', '.join(unknown)} are not listed under 'sources'")
    return CpuCatalog(rows, sources)
