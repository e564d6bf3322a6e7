"""Hourly price and spend so far of a listed instance, from the dated instance catalog (an estimate for spot), and
what a listed image or snapshot costs a month to store."""

from __future__ import annotations

from datetime import datetime

from gpulease.core.catalog import load_catalog
from gpulease.inventory.resources import Instance

BILLED_STATES = {"pending", "running", "stopping"}


def hourly_price(instance: Instance, cloud: str = "aws") -> float | None:
    """USD per hour: the catalog's on-demand price in the region, less the typical spot discount for spot."""
    known = load_catalog().get(cloud, instance.instance_type)
    if known is None:
        return None
    price = known.on_demand_price(instance.region)
    if price is None:
        return None
    if instance.market == "spot":
        price *= 1 - known.spot_discount
    return round(price, 4)


def age_hours(instance: Instance, now: datetime) -> float | None:
    if instance.launch_time is None:
        return None
    return max(0.0, (now - instance.launch_time).total_seconds() / 3600)


def spend_so_far(instance: Instance, now: datetime, cloud: str = "aws") -> float | None:
    """USD since the instance last started (EC2's LaunchTime, ECS's StartTime); unknown for a stopped instance or
    an unpriced type."""
    price = hourly_price(instance, cloud)
    hours = age_hours(instance, now)
    if price is None or hours is None or instance.state not in BILLED_STATES:
        return None
    return round(price * hours, 2)


def storage_monthly(size_gb: int, region: str, cloud: str = "aws") -> float | None:
    """USD per month for ``size_gb`` of snapshot storage in ``region`` (the catalog's ``snapshotGbMonth``). For an
    image this is an upper bound: its snapshots store the used blocks only."""
    prices = load_catalog().region_prices(cloud, region)
    if prices is None or not size_gb:
        return None
    return round(size_gb * prices.snapshot_gb_month, 2)
