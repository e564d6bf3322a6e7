"""The catalog's row types, validated by pydantic: GPU instance types, per-region price items, their sources."""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from gpulease.core import clock
from gpulease.core.catalog.undated import UNDATED, UNDATED_TEXT, date_label  # noqa: F401 (re-exported)

Cloud = Literal["aws", "alicloud"]
HOURS_PER_MONTH = 730.0
"""The clouds' own convention for turning a monthly rate into an hourly one (365 × 24 / 12)."""


class _Row(BaseModel):
    # allow_inf_nan=False: a price of .nan compares false with everything, so a NaN total would pass any budget.
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True, allow_inf_nan=False
    )


PRICE_ITEM_FLOOR = 1e-6
"""The smallest non-zero price item (USD per GB-month, per IOPS-month, per hour of an address): below a
millionth of a dollar a price is a typo that would switch the cost guards off (1e-300 is "free")."""
HOURLY_PRICE_FLOOR = PRICE_ITEM_FLOOR
"""The smallest price of an instance hour (USD): the same floor (a price API's answer of $0.00001 is kept, and the
refresh test data uses such answers); 1e-300 is refused."""
PRICE_CEILING = 10_000.0
"""The largest price the catalog takes (USD per hour, or per unit of a price item): the costliest instance hour is a
few hundred dollars; 1e30 is a typo whose sums the figures could not even be written in."""


def _ceiling(value: float) -> float:
    if value > PRICE_CEILING:
        raise ValueError(f"{value:g} USD is above any price; accepted: at most {PRICE_CEILING:g} USD")
    return value


def _price_item(value: float) -> float:
    _ceiling(value)
    if 0 < value < PRICE_ITEM_FLOOR:
        raise ValueError(f"{value:g} is below the floor of a price item; accepted: 0 or at least {PRICE_ITEM_FLOOR:g} USD")
    return value


def _hourly(value: float) -> float:
    _ceiling(value)
    if value < HOURLY_PRICE_FLOOR:
        raise ValueError(f"{value:g} USD per hour is below any instance hour's price; accepted: at least "
                         f"{HOURLY_PRICE_FLOOR:g}")
    return value


Price = Annotated[float, Field(ge=0, allow_inf_nan=False), AfterValidator(_price_item)]
"""A USD price item: finite, not negative (a negative price would lower every estimate), 0 or above the floor."""
SpotPrice = Annotated[float, Field(gt=0, allow_inf_nan=False), AfterValidator(_hourly)]
"""A current spot price, USD per hour: finite and above the floor (no cloud sells GPU hours for nothing)."""
AS_OF_LEAD_DAYS = 1
"""A price date may be at most this far past today (UTC): the price APIs' day may be ahead of ours."""


def _not_future(value: date) -> date:
    latest = clock.utcnow().date() + timedelta(days=AS_OF_LEAD_DAYS)
    if value > latest:
        raise ValueError(f"{value.isoformat()} is in the future; accepted: the day the price was read, at the latest "
                         f"{latest.isoformat()}")
    return value


PriceDate = Annotated[date, AfterValidator(_not_future)]
"""The day a price was read: never in the future (a date of 9999-12-31 would keep a price fresh for ever)."""
_ZONE_SUFFIX = re.compile(r"^-?[a-z0-9]{1,2}\Z")


def zone_in_region(zone: str, region: str) -> bool:
    """``us-east-1a`` is in ``us-east-1``, ``cn-hangzhou-h`` in ``cn-hangzhou``; ``us-east-1-bos-1a`` (a Local
    Zone) is in no region as far as the catalog is concerned: GPU spot prices are per availability zone."""
    return zone.startswith(region) and bool(_ZONE_SUFFIX.match(zone[len(region):]))


def _undated(dates: dict[str, date], priced: set[str], what: str) -> None:
    extra = sorted(set(dates) - priced)
    if extra:
        raise ValueError(f"{what} dates {', '.join(extra)}, which have no price in the row")


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
    as_of: PriceDate
    source: str = Field(..., min_length=1)
    prices_as_of: dict[str, PriceDate] = Field(
        default_factory=dict, description="The date of a region's on-demand price, where it is not asOf."
    )
    spot_prices: dict[str, SpotPrice] = Field(
        default_factory=dict, description="Current spot USD per hour by availability zone (written by a refresh)."
    )
    spot_prices_as_of: dict[str, PriceDate] = Field(
        default_factory=dict, description="The date of a zone's spot price, where it is not asOf."
    )

    @field_validator("prices")
    @classmethod
    def _positive(cls, prices: dict[str, float]) -> dict[str, float]:
        bad = sorted(region for region, price in prices.items() if not price >= HOURLY_PRICE_FLOOR)
        if bad:
            raise ValueError(f"prices must be at least {HOURLY_PRICE_FLOOR:g} USD per hour; not so in {', '.join(bad)}")
        huge = sorted(region for region, price in prices.items() if price > PRICE_CEILING)
        if huge:
            raise ValueError(f"prices must be at most {PRICE_CEILING:g} USD per hour; not so in {', '.join(huge)}")
        return prices

    @model_validator(mode="after")
    def _dated_items_exist(self) -> InstanceType:
        _undated(self.prices_as_of, set(self.prices), "pricesAsOf")
        _undated(self.spot_prices_as_of, set(self.spot_prices), "spotPricesAsOf")
        # A spot price is read against the region's on-demand price (its cap), so its zone must be in a priced region.
        orphans = sorted(z for z in self.spot_prices if not any(zone_in_region(z, r) for r in self.prices))
        if orphans:
            raise ValueError(
                f"spotPrices zones {', '.join(orphans)} are not availability zones of a region in prices "
                f"({', '.join(sorted(self.prices))})"
            )
        return self

    def price_date(self, region: str) -> date:
        """The date of the on-demand price in ``region``."""
        return self.prices_as_of.get(region, self.as_of)

    def spot_zone_prices(self, region: str) -> dict[str, float]:
        """Current spot prices of the zones of ``region`` that a refresh found, by zone."""
        return {zone: price for zone, price in self.spot_prices.items() if zone_in_region(zone, region)}

    def spot_price_date(self, zone: str) -> date:
        return self.spot_prices_as_of.get(zone, self.as_of)

    def price_dates(self) -> list[date]:
        return [self.price_date(r) for r in self.prices] + [self.spot_price_date(z) for z in self.spot_prices]

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


SCALAR_ITEMS = ("snapshotGbMonth", "publicIpv4Hour", "objectStorageGbMonth", "egressGb")
MAP_ITEMS = ("blockStorageGbMonth", "provisionedIopsMonth", "throughputMbpsMonth")


class RegionPrices(_Row):
    """Price items other than instance hours, for one cloud and region (USD)."""

    cloud: Cloud
    region: str = Field(..., min_length=2)
    block_storage_gb_month: dict[str, Price] = Field(..., min_length=1)
    provisioned_iops_month: dict[str, Price] = Field(default_factory=dict)
    throughput_mbps_month: dict[str, Price] = Field(default_factory=dict)
    snapshot_gb_month: Price
    public_ipv4_hour: Price
    object_storage_gb_month: Price
    egress_gb: Price
    as_of: PriceDate
    source: str = Field(..., min_length=1)
    prices_as_of: dict[str, PriceDate] = Field(
        default_factory=dict,
        description="The date of a price item where it is not asOf, keyed by item: snapshotGbMonth, "
        "blockStorageGbMonth.gp3, ...",
    )

    @model_validator(mode="after")
    def _dated_items_exist(self) -> RegionPrices:
        _undated(self.prices_as_of, set(self.item_keys()), "pricesAsOf")
        return self

    def item_keys(self) -> list[str]:
        """Every price item of the row, named as in the files (``blockStorageGbMonth.gp3``, ``egressGb``)."""
        keys = [f"{name}.{k}" for name, items in self._maps().items() for k in items]
        return keys + list(SCALAR_ITEMS)

    def _maps(self) -> dict[str, dict[str, float]]:
        return {
            "blockStorageGbMonth": self.block_storage_gb_month,
            "provisionedIopsMonth": self.provisioned_iops_month,
            "throughputMbpsMonth": self.throughput_mbps_month,
        }

    def item_price(self, key: str) -> float | None:
        """The price of one item (see ``item_keys``), or None when the row does not have it."""
        name, _, sub = key.partition(".")
        if sub:
            return self._maps().get(name, {}).get(sub)
        field = {"snapshotGbMonth": "snapshot_gb_month", "publicIpv4Hour": "public_ipv4_hour",
                 "objectStorageGbMonth": "object_storage_gb_month", "egressGb": "egress_gb"}.get(name)
        return getattr(self, field) if field else None

    def item_date(self, key: str) -> date:
        """The date of one price item (see ``item_keys``)."""
        return self.prices_as_of.get(key, self.as_of)

    def price_dates(self) -> list[date]:
        return [self.item_date(k) for k in self.item_keys()]

    def disk_item(self, disk_type: str, performance_level: str | None = None) -> str | None:
        """The item ``disk_gb_month`` prices a disk with (``blockStorageGbMonth.cloud_essd_pl2``), or None."""
        if performance_level and performance_level.upper() != "PL1":
            key = f"{disk_type}_{performance_level.lower()}"
            if key in self.block_storage_gb_month:
                return f"blockStorageGbMonth.{key}"
        return f"blockStorageGbMonth.{disk_type}" if disk_type in self.block_storage_gb_month else None

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
    undated: list[str] = Field(default_factory=list, description="The override rows that gave prices without a "
                               "date, each named by file, line and row with the prices left undated.")

    @property
    def as_of(self) -> str:
        """The oldest price date in the catalog: how stale the stalest number may be (``undated`` when an override
        gave a price without a date)."""
        dates = [d for it in self.instances for d in it.price_dates()] + [d for r in self.regions for d in r.price_dates()]
        return date_label(min(dates)) if dates else "unknown"

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
