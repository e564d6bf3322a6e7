"""Hourly price and spend so far of a listed instance, from the dated instance catalog (an estimate for spot), what
a stopped instance still costs (its volumes and addresses, ``gpulease.core.cost.stopped``), and what a listed image
or snapshot costs a month to store."""

from __future__ import annotations

from datetime import datetime

from gpulease.core.catalog import HOURS_PER_MONTH, load_catalog
from gpulease.core.cost.pricing import disk_monthly
from gpulease.inventory.resources import Address, Instance, Volume

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


def stopped_hourly(instance: Instance, volumes: list[Volume], addresses: list[Address], cloud: str = "aws") -> float | None:
    """USD per hour a stopped instance still costs: the listed volumes attached to it (the estimate's disk rule,
    ``gpulease.core.cost.pricing.disk_monthly``) and the listed addresses associated with it. None when one of
    them has no price, or for an Alibaba Cloud instance, whose stopped billing depends on its stop mode (standard
    mode keeps billing the instance; ``gpulease.core.cost.stopped``)."""
    if cloud != "aws":
        return None
    prices = load_catalog().region_prices(cloud, instance.region)
    if prices is None:
        return None
    total = 0.0
    for volume in volumes:
        if instance.id not in volume.attached_to:
            continue
        priced = disk_monthly(prices, volume.volume_type, volume.size_gb, None, volume.iops, volume.throughput)
        if priced is None:
            return None
        total += priced[0] / HOURS_PER_MONTH
    total += prices.public_ipv4_hour * sum(1 for a in addresses if a.instance_id == instance.id)
    return round(total, 4)
