"""Which instance types of the catalog hold a workload, with their price in one region, cheapest first."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any

from gpulease.core.catalog.models import Catalog, InstanceType
from gpulease.core.sizing.estimate import MemoryEstimate, estimate
from gpulease.core.sizing.shapes import SizingError
from gpulease.core.sizing.workload import DEFAULT_HEADROOM, Workload

NO_BF16 = ("T4", "V100")
"""GPUs without native bf16 (Turing, Volta)."""


@dataclass(frozen=True)
class Offer:
    """An instance type that holds the workload, with its price in one region."""

    instance: InstanceType
    region: str
    estimate: MemoryEstimate
    warnings: list[str] = field(default_factory=list)

    @property
    def headroom_gb(self) -> float:
        return self.instance.gpu_memory_gb - self.estimate.total_gb

    @property
    def on_demand_usd(self) -> float:
        return self.instance.prices[self.region]

    @property
    def on_demand_as_of(self) -> date:
        return self.instance.price_date(self.region)

    @property
    def spot_zone(self) -> str | None:
        """The region's cheapest zone by current spot price, when a refresh recorded spot prices; else None."""
        zones = self.instance.spot_zone_prices(self.region)
        return min(zones, key=lambda z: (zones[z], z)) if zones else None

    @property
    def spot_usd(self) -> float:
        """The cheapest zone's current spot price, else on-demand less the family's typical discount (an estimate)."""
        zone = self.spot_zone
        if zone is not None:
            return self.instance.spot_prices[zone]
        return self.on_demand_usd * (1 - self.instance.spot_discount)

    @property
    def spot_as_of(self) -> date:
        zone = self.spot_zone
        return self.instance.spot_price_date(zone) if zone else self.on_demand_as_of

    def as_dict(self) -> dict[str, Any]:
        it = self.instance
        return {
            "instanceType": it.type,
            "region": self.region,
            "gpuModel": it.gpu_model,
            "gpuCount": it.gpu_count,
            "gpuMemoryGb": it.gpu_memory_gb,
            "memoryBandwidthGbps": it.memory_bandwidth_gbps,
            "interconnect": it.interconnect,
            "vcpu": it.vcpu,
            "ramGb": it.ram_gb,
            "neededPerGpuGb": round(self.estimate.total_gb, 2),
            "headroomGb": round(self.headroom_gb, 2),
            "onDemandUsdPerHour": self.on_demand_usd,
            "spotEstimateUsdPerHour": round(self.spot_usd, 4),
            "spotBasis": "current" if self.spot_zone else "estimate",
            "spotZone": self.spot_zone,
            "spotAsOf": self.spot_as_of.isoformat(),
            "priceAsOf": self.on_demand_as_of.isoformat(),
            "warnings": self.warnings,
        }


def find_offers(
    workload: Workload,
    catalog: Catalog,
    cloud: str,
    region: str,
    *,
    gpus: int | None = None,
    headroom: float = DEFAULT_HEADROOM,
    model: str | None = None,
    nodes: int = 1,
) -> list[Offer]:
    """Instance types priced in ``region`` whose GPUs hold ``workload`` with ``headroom`` to spare, cheapest first.

    ``gpus`` pins the GPU count; otherwise every count is considered (the estimate is redone for each). With
    ``nodes`` above one the workload is sharded over the GPUs of every node (ZeRO-3 / FSDP)."""
    if not 0 <= headroom < 1:
        raise SizingError(f"headroom {headroom} must be a fraction in [0, 1)")
    offers = []
    for it in catalog.instances:
        if it.cloud != cloud or region not in it.prices:
            continue
        if gpus is not None and it.gpu_count != gpus:
            continue
        if model is not None and it.gpu_model.lower() != model.lower():
            continue
        est = estimate(workload, it.gpu_count * nodes)
        usable = it.gpu_memory_gb * (1 - headroom)
        if est.total_gb > usable:
            continue
        offers.append(
            Offer(
                instance=it,
                region=region,
                estimate=est,
                warnings=offer_warnings(workload, it),
            )
        )
    return sorted(offers, key=lambda o: (o.on_demand_usd, o.instance.gpu_count, o.instance.type))


def offer_warnings(workload: Workload, it: InstanceType) -> list[str]:
    warnings = []
    if it.gpu_count > 1 and it.interconnect == "pcie":
        how = "tensor-parallel layers exchange activations" if workload.inference else "sharded training gathers weights and reduces gradients"
        warnings.append(f"several GPUs over PCIe, no NVLink: {how} every step, so scaling is poor")
    if workload.precision == "bf16" and it.gpu_model in NO_BF16:
        warnings.append(f"{it.gpu_model} has no native bf16; use --precision fp16")
    return warnings
