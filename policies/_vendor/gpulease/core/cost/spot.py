"""What an instance is expected to cost per hour, and at most, from the catalog, with the date of each figure.

- On-demand: the region's on-demand price, both expected and worst case.
- Spot: the worst case is the stack's cap (``maxPrice`` / ``spotPriceLimit``), else the on-demand price (the
  cost model's worst-case rule, ``gpulease.core.cost``). The expected rate is the current spot price of the
  instance's zone when a refresh recorded it; when the zone is not known (or not priced), the highest current
  price among the region's priced zones (the instance may land in any of them); with no current prices at all,
  the on-demand price less the family's typical discount (an estimate).

The zone comes from the instance's own inputs, else from the data disk of the same experiment: a disk attaches
only to an instance in its own zone (EBS: https://docs.aws.amazon.com/ebs/latest/userguide/ebs-attaching-volume.html ;
ECS AttachDisk: https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-attachdisk), so
the disk's zone is the instance's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from gpulease.core import resources as rt
from gpulease.core.catalog.models import InstanceType
from gpulease.core.money import usd_per_hour

ZONE_INPUTS = ("availabilityZone", "zoneId")


@dataclass(frozen=True)
class InstanceQuote:
    """An instance's hourly figures: expected and worst case, each with the date of the price behind it."""

    label: str
    expected_usd: float
    worst_usd: float
    expected_as_of: date
    worst_as_of: date | None  # None: the worst case is the stack's own cap, not a catalog price
    estimate: bool


def _zone(inputs: Mapping[str, Any]) -> str | None:
    for key in ZONE_INPUTS:
        value = inputs.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def experiment_zones(resources: Iterable[tuple[str, Mapping[str, Any], str]]) -> dict[str, str]:
    """Experiment -> the one zone its data disks name, from ``(type, inputs, experiment)`` triples."""
    found: dict[str, set[str]] = {}
    for type_, inputs, experiment in resources:
        if type_ in rt.DATA_DISK_TYPES and (zone := _zone(inputs)):
            found.setdefault(experiment, set()).add(zone)
    return {exp: zones.pop() for exp, zones in found.items() if len(zones) == 1}


def instance_zone(inputs: Mapping[str, Any], experiment_zone: str | None) -> str | None:
    return _zone(inputs) or experiment_zone


def quote(it: InstanceType, region: str, *, spot: bool, cap: float | None, zone: str | None) -> InstanceQuote | None:
    """The figures for ``it`` in ``region``; None when the catalog has no on-demand price there."""
    on_demand = it.on_demand_price(region)
    if on_demand is None:
        return None
    od_date = it.price_date(region)
    if not spot:
        return InstanceQuote(f"{it.type} on-demand", on_demand, on_demand, od_date, od_date, estimate=False)
    worst = min(cap, on_demand) if cap else on_demand
    worst_as_of = od_date if worst == on_demand else None
    zones = it.spot_zone_prices(region)
    if zone is not None and zone in zones:
        current, when = zones[zone], it.spot_price_date(zone)
        label = f"{it.type} spot ({usd_per_hour(current)} in {zone} on {when.isoformat()})"
    elif zones:
        zone_used = max(zones, key=lambda z: (zones[z], z))
        current, when = zones[zone_used], it.spot_price_date(zone_used)
        label = f"{it.type} spot ({usd_per_hour(current)}, the highest of {len(zones)} zone(s) in {region} on {when.isoformat()})"
    else:
        current, when = on_demand * (1 - it.spot_discount), od_date
        label = f"{it.type} spot (est. {it.spot_discount:.0%} off {usd_per_hour(on_demand)})"
    return InstanceQuote(label, min(current, worst), worst, when, worst_as_of, estimate=True)
