"""Pricing one resource at a time: compute, disks, addresses and buckets, from the catalog, each line dated."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from gpulease.core import resources as rt
from gpulease.core import vocabulary as v
from gpulease.core.catalog import HOURS_PER_MONTH, Catalog, RegionPrices
from gpulease.core.catalog.cpu import load_cpu_catalog
from gpulease.core.compute import SPOT, ComputeUnit, form_of
from gpulease.core.cost.lines import SHARED, CostLine
from gpulease.core.cost.spot import instance_zone, quote
from gpulease.core.money import usd_per_gb

AWS_DEFAULT_VOLUME_TYPE = "gp2"
"""The EC2 API's default when a volume names no type."""
ALI_DEFAULT_DISK_CATEGORY = "cloud_efficiency"
ALI_DEFAULT_SYSTEM_DISK_GB = 40
GP3_FREE_IOPS = 3000
GP3_FREE_THROUGHPUT = 125
DEFAULT_BUCKET_GB = 100.0


@dataclass
class PricedResource:
    """One registered resource as the cost model reads it: its type, engine-form inputs and options."""

    type: str
    inputs: Mapping[str, Any]
    options: Mapping[str, Any]
    template_tags: Mapping[str, Any] = field(default_factory=dict)
    """For a form that takes no tags of its own (a Karpenter NodePool): the instance tags of its templates."""
    hosted: list[Any] = field(default_factory=list)
    """The compute units a CloudFormation stack's template creates (``gpulease.core.compute``), priced as its."""

    @property
    def tags(self) -> Mapping[str, str]:
        own = rt.tag_map(self.inputs.get("tags"))  # a map, or an autoscaling group's list of blocks
        return {**self.template_tags, **own} if self.template_tags else own

    @property
    def name(self) -> str:
        return str(self.options.get("name") or self.inputs.get("bucket") or self.type.split(":")[-1])

    @property
    def experiment(self) -> str:
        return str(self.tags.get(v.TAG_EXPERIMENT) or SHARED)

    @property
    def retained(self) -> bool:
        for key in ("retainOnDelete", "retain_on_delete"):
            if key in self.options:
                return bool(self.options[key])
        # Billed after destroy only when declared retained (gpulease.core.resources: the retain tag's one reading).
        return rt.retain_tag(self.tags) is True

    @property
    def cloud(self) -> str | None:
        """``aws`` or ``alicloud`` (aws-native resources are AWS's, a compute form its form's cloud), None for any
        other provider."""
        form = form_of(self.type)
        if form is not None:
            return form.cloud  # a Karpenter NodePool runs AWS instances
        head = self.type.split(":", 1)[0]
        return {"aws": "aws", "aws-native": "aws", "alicloud": "alicloud"}.get(head)

    @property
    def runtime_hours(self) -> float | None:
        return rt.number(self.tags.get(v.TAG_MAX_RUNTIME_HOURS))

    @property
    def region(self) -> str | None:
        """The resource's own region: its ``region`` input (pulumi_aws 7 takes one per resource), else its explicit
        provider's (passed as the ``region`` option); None for the stack's."""
        for value in (self.inputs.get("region"), self.options.get("region")):
            if isinstance(value, str) and value:
                return value
        return None


def disk_monthly(prices: RegionPrices, disk_type: str, size: float, performance_level: str | None = None,
                 iops: float | None = None, throughput: float | None = None) -> tuple[float, list[str], list[str]] | None:
    """USD a month for one disk: capacity by type (an ESSD's performance level), plus provisioned IOPS (gp3: above
    the 3,000 included) and gp3 throughput above the 125 MB/s included; with the extras named and the catalog items
    used. None when the catalog has no price for the type. The one rule for every disk the kit prices (the
    estimate, and ``gpulease ls`` for a stopped instance's volumes)."""
    per_gb = prices.disk_gb_month(disk_type, performance_level)
    if per_gb is None:
        return None
    monthly = size * per_gb
    extras: list[str] = []
    items = [item for item in [prices.disk_item(disk_type, performance_level)] if item]
    if iops and disk_type in prices.provisioned_iops_month:
        billable = max(0.0, iops - GP3_FREE_IOPS) if disk_type == "gp3" else iops
        monthly += billable * prices.provisioned_iops_month[disk_type]
        extras.append(f"{iops:g} IOPS")
        items.append(f"provisionedIopsMonth.{disk_type}")
    if throughput and disk_type in prices.throughput_mbps_month:
        monthly += max(0.0, throughput - GP3_FREE_THROUGHPUT) * prices.throughput_mbps_month[disk_type]
        extras.append(f"{throughput:g} MB/s")
        items.append(f"throughputMbpsMonth.{disk_type}")
    return monthly, extras, items


class Pricer:
    """The lines, notes and unknown prices of one stack, added resource by resource."""

    def __init__(self, catalog: Catalog, region: str | None):
        self.catalog = catalog
        self.region = region
        self.lines: list[CostLine] = []
        self.notes: list[str] = []
        self.unknown: list[str] = []
        self.unknown_of: dict[str | None, list[str]] = {}
        """What could not be priced, per experiment (None: the whole stack)."""
        self.unsized: set[str | None] = set()
        """The experiments with a disk of unknown size: not counted in the running figure (a note says so), but
        their figure while stopped, disks only, is then unknown, never a known $0."""
        self.experiment: str | None = None
        """The experiment of the resource being priced (None outside one: what is unknown concerns the stack)."""
        self.zones: dict[str, str] = {}

    def unknown_price(self, what: str) -> None:
        """Something billed that cannot be priced: listed, and the worst case of its experiment and of the stack
        is then unknown (never a smaller number presented as the bound)."""
        if what not in self.unknown:
            self.unknown.append(what)
        mine = self.unknown_of.setdefault(self.experiment, [])
        if what not in mine:
            mine.append(what)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def region_prices(self, cloud: str) -> RegionPrices | None:
        if self.region is None:
            self.unknown_price(f"{cloud} storage and network prices (no region given or found in the inputs)")
            return None
        prices = self.catalog.region_prices(cloud, self.region)
        if prices is None:
            self.unknown_price(f"{cloud} storage and network prices in {self.region} (not in the catalog)")
        return prices

    def add(self, r: PricedResource, item: str, hourly: float | None, max_hourly: float | None = None, *,
            retained: bool = False, estimate: bool = False, runtime: float | None = None,
            as_of: date | None = None, cap_as_of: date | None = None, compute: bool = False,
            keeps_billing_stopped: bool = False) -> None:
        max_hourly = hourly if max_hourly is None else max_hourly
        monthly = hourly * HOURS_PER_MONTH if retained and hourly is not None else 0.0
        self.lines.append(
            CostLine(
                experiment=r.experiment,
                resource=r.name,
                type=r.type,
                item=item,
                hourly_usd=hourly,
                max_hourly_usd=max_hourly,
                runtime_hours=runtime if runtime is not None else r.runtime_hours,
                after_destroy_monthly_usd=monthly,
                retained=retained,
                estimate=estimate,
                price_as_of=as_of.isoformat() if as_of and hourly is not None else None,
                cap_as_of=cap_as_of.isoformat() if cap_as_of and cap_as_of != as_of else None,
                compute=compute,
                region=self.region,
                keeps_billing_stopped=keeps_billing_stopped,
            )
        )

    # --- compute ---------------------------------------------------------------------------------------------
    def instance(self, r: PricedResource, cloud: str, instance_type: Any, spot: bool, cap: float | None) -> None:
        if not instance_type:
            self.unknown_price(f"{r.name}: the instance type is not known before the update runs")
            self.add(r, f"instance ({'spot' if spot else 'on-demand'}, type unknown)", None, compute=True)
            return
        # A GPU type from the catalog, else a CPU type (the preparation phase's instance).
        it = self.catalog.get(cloud, str(instance_type)) or load_cpu_catalog().get(cloud, str(instance_type))
        price = it.on_demand_price(self.region) if it and self.region else None
        if price is None:
            where = f"in {self.region}" if self.region else "(no region)"
            reason = "not in the catalog" if it is None else f"not priced {where}"
            self.unknown_price(f"{cloud} instance {instance_type} {where} ({reason})")
            self.add(r, f"{instance_type} ({'spot' if spot else 'on-demand'}, price unknown)", None, compute=True)
            return
        assert it is not None and self.region is not None
        zone = instance_zone(r.inputs, self.zones.get(r.experiment))
        q = quote(it, self.region, spot=spot, cap=cap, zone=zone)  # type: ignore[arg-type]
        assert q is not None
        self.add(r, q.label, q.expected_usd, q.worst_usd, estimate=q.estimate, as_of=q.expected_as_of,
                 cap_as_of=q.worst_as_of, compute=True)

    def disk(self, r: PricedResource, cloud: str, label: str, size: float | None, disk_type: str,
             performance_level: str | None = None, iops: float | None = None, throughput: float | None = None,
             retained: bool = False) -> None:
        prices = self.region_prices(cloud)
        if size is None:
            self.note(f"{r.name}: {label} size is not in the inputs (taken from an image or snapshot); not counted")
            self.unsized.add(self.experiment)
            return
        shown = f"{label} {disk_type}{' ' + performance_level if performance_level else ''} {size:g} GB"
        if prices is None:
            self.add(r, shown, None, retained=retained, keeps_billing_stopped=True)
            return
        priced = disk_monthly(prices, disk_type, size, performance_level, iops, throughput)
        if priced is None:
            self.unknown_price(f"{cloud} disk type {disk_type} in {self.region}")
            self.add(r, shown, None, retained=retained, keeps_billing_stopped=True)
            return
        monthly, extras, items = priced
        if extras:
            shown += f" ({', '.join(extras)})"
        when = min(prices.item_date(item) for item in items if item)
        self.add(r, shown, monthly / HOURS_PER_MONTH, retained=retained, as_of=when, keeps_billing_stopped=True)

    def public_ip(self, r: PricedResource, cloud: str) -> None:
        prices = self.region_prices(cloud)
        free = prices is not None and prices.public_ipv4_hour == 0
        self.add(r, "public IP (billed by traffic)" if free else "public IPv4 address", prices.public_ipv4_hour if prices else None,
                 as_of=prices.item_date("publicIpv4Hour") if prices else None, keeps_billing_stopped=True)
        if prices is not None:
            self.note(f"internet egress (e.g. downloading results) is billed per GB: {usd_per_gb(prices.egress_gb)} in {self.region}; not included")

    def bucket(self, r: PricedResource, cloud: str, assumed_gb: float, basis: str) -> None:
        prices = self.region_prices(cloud)
        gb = rt.number(r.options.get("estimatedGb"))
        if gb is None:
            gb = assumed_gb
            self.note(f"{r.name}: bucket size assumed {gb:g} GB ({basis}); checkpoints expire by the lifecycle rules")
        hourly = gb * prices.object_storage_gb_month / HOURS_PER_MONTH if prices else None
        self.add(r, f"bucket storage ~{gb:g} GB", hourly, retained=r.retained, estimate=True,
                 as_of=prices.item_date("objectStorageGbMonth") if prices else None)


def aws_instance(p: Pricer, r: PricedResource, unit: ComputeUnit | None = None) -> None:
    """An EC2 instance or spot request; ``unit`` carries what its launch template gives (type, market)."""
    market = r.inputs.get("instanceMarketOptions") or {}
    spot = market.get("marketType") == "spot" or r.type == rt.AWS_SPOT_REQUEST or (
        unit is not None and unit.market.kind == SPOT)
    cap = rt.number((market.get("spotOptions") or {}).get("maxPrice") or r.inputs.get("spotPrice"))
    p.instance(r, "aws", r.inputs.get("instanceType") or _first(unit), spot, cap)
    root = r.inputs.get("rootBlockDevice") or {}
    p.disk(
        r, "aws", "root disk", rt.number(root.get("volumeSize")), str(root.get("volumeType") or AWS_DEFAULT_VOLUME_TYPE),
        iops=rt.number(root.get("iops")), throughput=rt.number(root.get("throughput")),
        retained=root.get("deleteOnTermination") is False,
    )
    for dev in r.inputs.get("ebsBlockDevices") or []:
        p.disk(
            r, "aws", f"disk {dev.get('deviceName', '')}".strip(), rt.number(dev.get("volumeSize")),
            str(dev.get("volumeType") or AWS_DEFAULT_VOLUME_TYPE), iops=rt.number(dev.get("iops")),
            throughput=rt.number(dev.get("throughput")), retained=dev.get("deleteOnTermination") is False,
        )
    if r.inputs.get("associatePublicIpAddress"):
        p.public_ip(r, "aws")
    elif "associatePublicIpAddress" not in r.inputs:
        p.note(f"{r.name}: whether it gets a public IPv4 depends on the subnet; not counted")


def _first(unit: ComputeUnit | None) -> str | None:
    return unit.types[0] if unit is not None and unit.types else None


def ali_instance(p: Pricer, r: PricedResource, unit: ComputeUnit | None = None) -> None:
    i = r.inputs
    if str(i.get("instanceChargeType") or "PostPaid") == "PrePaid":
        p.note(f"{r.name}: a subscription (PrePaid) instance is billed for the whole period, not per hour")
    strategy = str(i.get("spotStrategy") or "NoSpot")
    cap = rt.number(i.get("spotPriceLimit")) if strategy == "SpotWithPriceLimit" else None
    spot = strategy != "NoSpot" or (unit is not None and unit.market.kind == SPOT)
    p.instance(r, "alicloud", i.get("instanceType") or _first(unit), spot, cap)
    # A system disk the instance leaves unset comes from its launch template's system_disk block, if any.
    tpl = next((t.props.get("systemDisk") for t in (unit.templates if unit else [])
                if isinstance(t.props.get("systemDisk"), Mapping)), None) or {}
    p.disk(
        r, "alicloud", "system disk",
        rt.number(i.get("systemDiskSize")) or rt.number(tpl.get("size")) or ALI_DEFAULT_SYSTEM_DISK_GB,
        str(i.get("systemDiskCategory") or tpl.get("category") or ALI_DEFAULT_DISK_CATEGORY),
        i.get("systemDiskPerformanceLevel") or tpl.get("performanceLevel") or None,
    )
    for disk in i.get("dataDisks") or []:
        p.disk(
            r, "alicloud", "data disk", rt.number(disk.get("size")), str(disk.get("category") or ALI_DEFAULT_DISK_CATEGORY),
            disk.get("performanceLevel") or None, retained=disk.get("deleteWithInstance") is False,
        )
    if (rt.number(i.get("internetMaxBandwidthOut")) or 0) > 0:
        if str(i.get("internetChargeType") or "PayByTraffic") == "PayByBandwidth":
            p.unknown_price(f"{r.name}: fixed public bandwidth (PayByBandwidth) is not in the catalog")
        p.public_ip(r, "alicloud")
