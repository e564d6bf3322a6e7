"""The catalog's row types, validated by pydantic: GPU instance types, per-region price items, their sources."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

Cloud = Literal["aws", "alicloud"]
HOURS_PER_MONTH = 730.0
"""The clouds' own convention for turning a monthly rate into an hourly one (365 × 24 / 12)."""


class _Row(BaseModel):
    # allow_inf_nan=False: a price of .nan compares false with everything, so a NaN total would pass any budget.
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True, allow_inf_nan=False
    )


Price = Annotated[float, Field(ge=0, allow_inf_nan=False)]
"""A USD price item: finite and not negative (a negative price would lower every estimate)."""


class Source(_Row):
    url: str = Field(..., min_length=1)
    note: str = ""


class InstanceType(_Row):
    """One GPU instance type: its GPUs, its host and its on-demand price per region."""

    cloud: Cloud
    type: str = Field(..., min_length=3)
    gpu_model: str = Field(..., min_length=1)
    gpu_count: int = Field(..., ge=1, le=16)
    gpu_memory_gb: float = Field(..., gt=0, description="Memory per GPU, GB.")
    memory_bandwidth_gbps: float = Field(..., gt=0, description="Memory bandwidth per GPU, GB/s.")
    interconnect: Literal["nvlink", "pcie"] = Field(..., description="How the GPUs of one instance exchange data.")
    vcpu: int = Field(..., ge=1)
    ram_gb: float = Field(..., gt=0)
    prices: dict[str, Annotated[float, Field(allow_inf_nan=False)]] = Field(
        ..., min_length=1, description="On-demand USD per hour by region."
    )
    spot_discount: float = Field(..., ge=0, lt=1, description="Typical spot discount, a fraction of on-demand.")
    as_of: date
    source: str = Field(..., min_length=1)

    @field_validator("prices")
    @classmethod
    def _positive(cls, prices: dict[str, float]) -> dict[str, float]:
        bad = sorted(region for region, price in prices.items() if not price > 0)
        if bad:
            raise ValueError(f"prices must be positive USD per hour; not so in {', '.join(bad)}")
        return prices

    @property
    def total_gpu_memory_gb(self) -> float:
        return self.gpu_memory_gb * self.gpu_count

    def on_demand_price(self, region: str) -> float | None:
        return self.prices.get(region)

    def spot_estimate(self, region: str) -> float | None:
        price = self.prices.get(region)
        return None if price is None else price * (1 - self.spot_discount)

    def describe_gpus(self) -> str:
        return f"{self.gpu_count} x {self.gpu_model} {self.gpu_memory_gb:g} GB"


class RegionPrices(_Row):
    """Price items other than instance hours, for one cloud and region (USD)."""

    cloud: Cloud
    region: str = Field(..., min_length=2)
    block_storage_gb_month: dict[str, Price] = Field(..., min_length=1)
    provisioned_iops_month: dict[str, Price] = Field(default_factory=dict)
    throughput_mbps_month: dict[str, Price] = Field(default_factory=dict)
    snapshot_gb_month: float = Field(..., ge=0)
    public_ipv4_hour: float = Field(..., ge=0)
    object_storage_gb_month: float = Field(..., ge=0)
    egress_gb: float = Field(..., ge=0)
    as_of: date
    source: str = Field(..., min_length=1)

    def disk_gb_month(self, disk_type: str, performance_level: str | None = None) -> float | None:
        """Capacity price of a disk type; an Alibaba ESSD's performance level picks ``cloud_essd_plN``."""
        if performance_level and performance_level.upper() != "PL1":
            found = self.block_storage_gb_month.get(f"{disk_type}_{performance_level.lower()}")
            if found is not None:
                return found
        return self.block_storage_gb_month.get(disk_type)


class Catalog(BaseModel):
    """Every instance type and region price row, after the user's override files were merged on top."""

    instances: list[InstanceType]
    regions: list[RegionPrices]
    sources: dict[str, Source]
    files: list[str] = Field(default_factory=list, description="The files read, base first, overrides last.")

    @property
    def as_of(self) -> str:
        """The oldest price date in the catalog: how stale the stalest number may be."""
        dates = [it.as_of for it in self.instances] + [r.as_of for r in self.regions]
        return min(dates).isoformat() if dates else "unknown"

    def get(self, cloud: str, instance_type: str) -> InstanceType | None:
        for item in self.instances:
            if item.cloud == cloud and item.type == instance_type:
                return item
        return None

    def region_prices(self, cloud: str, region: str) -> RegionPrices | None:
        for item in self.regions:
            if item.cloud == cloud and item.region == region:
                return item
        return None

    def regions_of(self, cloud: str) -> list[str]:
        """Regions with at least one priced instance type, for error messages."""
        return sorted({region for it in self.instances if it.cloud == cloud for region in it.prices})

    def source_url(self, key: str) -> str:
        found = self.sources.get(key)
        return found.url if found else key

    def offers(
        self, cloud: str, region: str, *, gpu_memory_gb: float | None, count: int, model: str | None
    ) -> list[InstanceType]:
        """Types meeting the requirements with a price in ``region``, cheapest first."""
        found = [
            it
            for it in self.instances
            if it.cloud == cloud
            and region in it.prices
            and it.gpu_count == count
            and (gpu_memory_gb is None or it.gpu_memory_gb >= gpu_memory_gb)
            and (model is None or it.gpu_model.lower() == model.lower())
        ]
        return sorted(found, key=lambda it: (it.prices[region], it.type))
