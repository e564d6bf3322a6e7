"""What a stack costs: per hour while it runs, at worst until its deadline, and per month after destroy.

``estimate_resources`` reads resource inputs in engine form (camelCase, exactly what ``gpulease.render`` captures
and what the policy pack sees) and prices them from the catalog:

- instance hours: on-demand, or for spot the current spot price of the instance's zone when a refresh recorded
  it, else the catalog's typical discount (an estimate; ``components.spot_pricing``); the worst case charges the
  spot cap (``maxPrice`` / ``spotPriceLimit``, else the on-demand price, which is the cap both clouds apply);
- root and data disks by type and size (plus provisioned IOPS and throughput), a public IPv4 address;
- the checkpoint bucket: its size is not known before training, so it is assumed to hold as much as the data
  disks (checkpoints are synced from them) unless an ``estimatedGb`` option says otherwise;
- worst case = each resource's hourly cap × its ``gpulease:max-runtime-hours`` tag, summed; what keeps billing
  after destroy = retained disks and buckets (``retainOnDelete`` option or ``gpulease:retain=true``), per month.

Every line carries the date of the price behind its figure (``price_as_of``; ``cap_as_of`` for the worst case when
it differs), so a report can name how old each number is (``components.catalog.freshness``).

Each resource is a ``(type, inputs)`` pair, or ``(type, inputs, options)`` where options may hold ``name``,
``retainOnDelete`` and ``estimatedGb``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import date
from typing import Any

from components.catalog import HOURS_PER_MONTH, Catalog, RegionPrices, load_catalog
from components.catalog.freshness import describe_catalog
from components.spot_pricing import experiment_zones, instance_zone, quote
from gpulease.core import vocabulary as v

AWS_INSTANCE = "aws:ec2/instance:Instance"
AWS_VOLUME = "aws:ebs/volume:Volume"
AWS_EIP = "aws:ec2/eip:Eip"
AWS_BUCKETS = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
ALI_INSTANCE = "alicloud:ecs/instance:Instance"
ALI_DISKS = ("alicloud:ecs/ecsDisk:EcsDisk", "alicloud:ecs/disk:Disk")
ALI_BUCKET = "alicloud:oss/bucket:Bucket"

AWS_DEFAULT_VOLUME_TYPE = "gp2"
"""The EC2 API's default when a volume names no type."""
ALI_DEFAULT_DISK_CATEGORY = "cloud_efficiency"
ALI_DEFAULT_SYSTEM_DISK_GB = 40
GP3_FREE_IOPS = 3000
GP3_FREE_THROUGHPUT = 125
DEFAULT_BUCKET_GB = 100.0
SHARED = "(shared)"

_REGION = re.compile(r"^([a-z]{2}(?:-gov)?-[a-z]+(?:-\d+)?)")


@dataclass(frozen=True)
class CostLine:
    """One billed item of one resource."""

    experiment: str
    resource: str
    type: str
    item: str
    hourly_usd: float | None
    max_hourly_usd: float | None
    runtime_hours: float | None
    after_destroy_monthly_usd: float = 0.0
    retained: bool = False
    estimate: bool = False
    price_as_of: str | None = None
    """The date of the price behind ``hourly_usd`` (ISO); None when unpriced."""
    cap_as_of: str | None = None
    """The date of the price behind ``max_hourly_usd`` when it is a different catalog price (the on-demand cap of a
    spot instance priced at its current spot price); None when the same, or when the cap is the stack's own."""

    @property
    def expected_usd(self) -> float | None:
        if self.hourly_usd is None or self.runtime_hours is None:
            return None
        return self.hourly_usd * self.runtime_hours

    @property
    def worst_case_usd(self) -> float | None:
        if self.max_hourly_usd is None or self.runtime_hours is None:
            return None
        return self.max_hourly_usd * self.runtime_hours


@dataclass(frozen=True)
class ExperimentCost:
    """The lines of one experiment (a sweep's shared resources form their own row)."""

    name: str
    shared: bool
    hourly_usd: float
    max_hourly_usd: float
    runtime_hours: float | None
    expected_usd: float
    worst_case_usd: float
    after_destroy_monthly_usd: float
    budget_usd: float | None


@dataclass
class StackCost:
    cloud: str | None
    region: str | None
    hourly_usd: float
    max_hourly_usd: float
    expected_usd: float
    worst_case_usd: float
    after_destroy_monthly_usd: float
    lines: list[CostLine] = field(default_factory=list)
    experiments: list[ExperimentCost] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unknown_prices: list[str] = field(default_factory=list)
    prices_as_of: str | None = None
    """The oldest date among the prices the lines used (the catalog's oldest when none was used)."""
    price_catalog: str | None = None
    """Where the prices came from: the shipped catalog's date and any override files."""

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["lines"] = [
            {**asdict(line), "expected_usd": line.expected_usd, "worst_case_usd": line.worst_case_usd} for line in self.lines
        ]
        return out


@dataclass
class _Resource:
    type: str
    inputs: Mapping[str, Any]
    options: Mapping[str, Any]

    @property
    def tags(self) -> Mapping[str, str]:
        tags = self.inputs.get("tags")
        return tags if isinstance(tags, Mapping) else {}

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
        return str(self.tags.get(v.TAG_RETAIN, "")).lower() == "true"

    @property
    def runtime_hours(self) -> float | None:
        return _number(self.tags.get(v.TAG_MAX_RUNTIME_HOURS))


def _number(value: Any) -> float | None:
    try:
        return float(value) if value is not None and value != "" else None
    except (TypeError, ValueError):
        return None


def region_from_zone(zone: str) -> str | None:
    """``us-east-1a`` → ``us-east-1``; ``cn-hangzhou-h`` → ``cn-hangzhou``; ``ap-southeast-1a`` → ``ap-southeast-1``."""
    match = _REGION.match(zone or "")
    return match.group(1) if match else None


_ARN_REGION = re.compile(r"(?:arn:aws[a-z-]*|acs):[a-z0-9-]+:([a-z]{2}(?:-gov)?-[a-z]+(?:-\d+)?):")


def derive_region(resources: Iterable[_Resource]) -> str | None:
    """The region the inputs name most often: ``region`` inputs first, then availability zones, then ARNs."""
    found: dict[str, Counter[str]] = {"region": Counter(), "zone": Counter(), "arn": Counter()}

    def walk(value: Any, key: str | None, depth: int) -> None:
        if depth > 6:
            return
        if isinstance(value, Mapping):
            for k, child in value.items():
                if k != "tags":
                    walk(child, str(k), depth + 1)
        elif isinstance(value, list):
            for child in value:
                walk(child, key, depth + 1)
        elif isinstance(value, str):
            if key in ("region", "regionId") and _REGION.fullmatch(value):
                found["region"][value] += 1
            elif key in ("availabilityZone", "zoneId") and (region := region_from_zone(value)):
                found["zone"][region] += 1
            elif (match := _ARN_REGION.search(value)) is not None:
                found["arn"][match.group(1)] += 1

    for r in resources:
        walk(r.inputs, None, 0)
    for kind in ("region", "zone", "arn"):
        if found[kind]:
            return found[kind].most_common(1)[0][0]
    return None


class _Pricer:
    def __init__(self, catalog: Catalog, region: str | None):
        self.catalog = catalog
        self.region = region
        self.lines: list[CostLine] = []
        self.notes: list[str] = []
        self.unknown: list[str] = []
        self.zones: dict[str, str] = {}

    def unknown_price(self, what: str) -> None:
        if what not in self.unknown:
            self.unknown.append(what)

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

    def add(self, r: _Resource, item: str, hourly: float | None, max_hourly: float | None = None, *,
            retained: bool = False, estimate: bool = False, runtime: float | None = None,
            as_of: date | None = None, cap_as_of: date | None = None) -> None:
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
            )
        )

    # --- compute ---------------------------------------------------------------------------------------------
    def instance(self, r: _Resource, cloud: str, instance_type: Any, spot: bool, cap: float | None) -> None:
        if not instance_type:
            self.unknown_price(f"{r.name}: the instance type is not known before the update runs")
            return
        it = self.catalog.get(cloud, str(instance_type))
        price = it.on_demand_price(self.region) if it and self.region else None
        if price is None:
            where = f"in {self.region}" if self.region else "(no region)"
            reason = "not in the catalog" if it is None else f"not priced {where}"
            self.unknown_price(f"{cloud} instance {instance_type} {where} ({reason})")
            self.add(r, f"{instance_type} ({'spot' if spot else 'on-demand'}, price unknown)", None)
            return
        assert it is not None and self.region is not None
        zone = instance_zone(r.inputs, self.zones.get(r.experiment))
        q = quote(it, self.region, spot=spot, cap=cap, zone=zone)
        assert q is not None
        self.add(r, q.label, q.expected_usd, q.worst_usd, estimate=q.estimate, as_of=q.expected_as_of,
                 cap_as_of=q.worst_as_of)

    def disk(self, r: _Resource, cloud: str, label: str, size: float | None, disk_type: str,
             performance_level: str | None = None, iops: float | None = None, throughput: float | None = None,
             retained: bool = False) -> None:
        prices = self.region_prices(cloud)
        if size is None:
            self.note(f"{r.name}: {label} size is not in the inputs (taken from an image or snapshot); not counted")
            return
        shown = f"{label} {disk_type}{' ' + performance_level if performance_level else ''} {size:g} GB"
        if prices is None:
            self.add(r, shown, None, retained=retained)
            return
        per_gb = prices.disk_gb_month(disk_type, performance_level)
        items = [prices.disk_item(disk_type, performance_level)]
        if per_gb is None:
            self.unknown_price(f"{cloud} disk type {disk_type} in {self.region}")
            self.add(r, shown, None, retained=retained)
            return
        monthly = size * per_gb
        extras = []
        if iops and disk_type in prices.provisioned_iops_month:
            billable = max(0.0, iops - GP3_FREE_IOPS) if disk_type == "gp3" else iops
            monthly += billable * prices.provisioned_iops_month[disk_type]
            extras.append(f"{iops:g} IOPS")
            items.append(f"provisionedIopsMonth.{disk_type}")
        if throughput and disk_type in prices.throughput_mbps_month:
            monthly += max(0.0, throughput - GP3_FREE_THROUGHPUT) * prices.throughput_mbps_month[disk_type]
            extras.append(f"{throughput:g} MB/s")
            items.append(f"throughputMbpsMonth.{disk_type}")
        if extras:
            shown += f" ({', '.join(extras)})"
        when = min(prices.item_date(item) for item in items if item)
        self.add(r, shown, monthly / HOURS_PER_MONTH, retained=retained, as_of=when)

    def public_ip(self, r: _Resource, cloud: str) -> None:
        prices = self.region_prices(cloud)
        free = prices is not None and prices.public_ipv4_hour == 0
        self.add(r, "public IP (billed by traffic)" if free else "public IPv4 address", prices.public_ipv4_hour if prices else None,
                 as_of=prices.item_date("publicIpv4Hour") if prices else None)
        if prices is not None:
            self.note(f"internet egress (e.g. downloading results) is billed per GB: ${prices.egress_gb:g}/GB in {self.region}; not included")

    def bucket(self, r: _Resource, cloud: str, assumed_gb: float, basis: str) -> None:
        prices = self.region_prices(cloud)
        gb = _number(r.options.get("estimatedGb"))
        if gb is None:
            gb = assumed_gb
            self.note(f"{r.name}: bucket size assumed {gb:g} GB ({basis}); checkpoints expire by the lifecycle rules")
        hourly = gb * prices.object_storage_gb_month / HOURS_PER_MONTH if prices else None
        self.add(r, f"bucket storage ~{gb:g} GB", hourly, retained=r.retained, estimate=True,
                 as_of=prices.item_date("objectStorageGbMonth") if prices else None)


def _aws_instance(p: _Pricer, r: _Resource) -> None:
    market = r.inputs.get("instanceMarketOptions") or {}
    spot = market.get("marketType") == "spot"
    cap = _number((market.get("spotOptions") or {}).get("maxPrice"))
    p.instance(r, "aws", r.inputs.get("instanceType"), spot, cap)
    root = r.inputs.get("rootBlockDevice") or {}
    p.disk(
        r, "aws", "root disk", _number(root.get("volumeSize")), str(root.get("volumeType") or AWS_DEFAULT_VOLUME_TYPE),
        iops=_number(root.get("iops")), throughput=_number(root.get("throughput")),
        retained=root.get("deleteOnTermination") is False,
    )
    for dev in r.inputs.get("ebsBlockDevices") or []:
        p.disk(
            r, "aws", f"disk {dev.get('deviceName', '')}".strip(), _number(dev.get("volumeSize")),
            str(dev.get("volumeType") or AWS_DEFAULT_VOLUME_TYPE), iops=_number(dev.get("iops")),
            throughput=_number(dev.get("throughput")), retained=dev.get("deleteOnTermination") is False,
        )
    if r.inputs.get("associatePublicIpAddress"):
        p.public_ip(r, "aws")
    elif "associatePublicIpAddress" not in r.inputs:
        p.note(f"{r.name}: whether it gets a public IPv4 depends on the subnet; not counted")


def _ali_instance(p: _Pricer, r: _Resource) -> None:
    i = r.inputs
    if str(i.get("instanceChargeType") or "PostPaid") == "PrePaid":
        p.note(f"{r.name}: a subscription (PrePaid) instance is billed for the whole period, not per hour")
    strategy = str(i.get("spotStrategy") or "NoSpot")
    cap = _number(i.get("spotPriceLimit")) if strategy == "SpotWithPriceLimit" else None
    p.instance(r, "alicloud", i.get("instanceType"), strategy != "NoSpot", cap)
    p.disk(
        r, "alicloud", "system disk", _number(i.get("systemDiskSize")) or ALI_DEFAULT_SYSTEM_DISK_GB,
        str(i.get("systemDiskCategory") or ALI_DEFAULT_DISK_CATEGORY), i.get("systemDiskPerformanceLevel") or None,
    )
    for disk in i.get("dataDisks") or []:
        p.disk(
            r, "alicloud", "data disk", _number(disk.get("size")), str(disk.get("category") or ALI_DEFAULT_DISK_CATEGORY),
            disk.get("performanceLevel") or None, retained=disk.get("deleteWithInstance") is False,
        )
    if (_number(i.get("internetMaxBandwidthOut")) or 0) > 0:
        if str(i.get("internetChargeType") or "PayByTraffic") == "PayByBandwidth":
            p.unknown_price(f"{r.name}: fixed public bandwidth (PayByBandwidth) is not in the catalog")
        p.public_ip(r, "alicloud")


def estimate_resources(
    resources: Iterable[tuple[str, Mapping[str, Any]] | tuple[str, Mapping[str, Any], Mapping[str, Any]]],
    region: str | None = None,
    *,
    catalog: Catalog | None = None,
) -> StackCost:
    """Price engine-form resource inputs; ``region`` defaults to the one the inputs name (``derive_region``)."""
    items = [
        _Resource(type=entry[0], inputs=entry[1] or {}, options=(entry[2] if len(entry) > 2 else None) or {})
        for entry in resources
    ]
    catalog = catalog or load_catalog()
    region = region or derive_region(items)
    pricer = _Pricer(catalog, region)
    pricer.zones = experiment_zones((r.type, r.inputs, r.experiment) for r in items)
    data_gb = 0.0
    for r in items:
        if r.type in (AWS_VOLUME, *ALI_DISKS):
            data_gb += _number(r.inputs.get("size")) or 0.0
    basis = "as much as the data disks" if data_gb else "no data disk to go by"
    for r in items:
        i = r.inputs
        if r.type == AWS_INSTANCE:
            _aws_instance(pricer, r)
        elif r.type == AWS_VOLUME:
            pricer.disk(
                r, "aws", "data disk", _number(i.get("size")), str(i.get("type") or AWS_DEFAULT_VOLUME_TYPE),
                iops=_number(i.get("iops")), throughput=_number(i.get("throughput")), retained=r.retained,
            )
        elif r.type == AWS_EIP:
            pricer.public_ip(r, "aws")
        elif r.type in AWS_BUCKETS:
            pricer.bucket(r, "aws", data_gb or DEFAULT_BUCKET_GB, basis)
        elif r.type == ALI_INSTANCE:
            _ali_instance(pricer, r)
        elif r.type in ALI_DISKS:
            pricer.disk(
                r, "alicloud", "data disk", _number(i.get("size")), str(i.get("category") or ALI_DEFAULT_DISK_CATEGORY),
                i.get("performanceLevel") or None, retained=r.retained,
            )
        elif r.type == ALI_BUCKET:
            pricer.bucket(r, "alicloud", data_gb or DEFAULT_BUCKET_GB, basis)
    return _summarise(pricer, items, catalog)


def _summarise(pricer: _Pricer, items: list[_Resource], catalog: Catalog) -> StackCost:
    lines = pricer.lines
    runtimes = [rt for r in items if (rt := r.runtime_hours) is not None]
    stack_runtime = max(runtimes) if runtimes else None
    if any(line.runtime_hours is None for line in lines):
        if stack_runtime is None:
            pricer.unknown_price(f"max runtime: no resource carries {v.TAG_MAX_RUNTIME_HOURS}, so no worst case")
        else:
            pricer.note(f"resources without {v.TAG_MAX_RUNTIME_HOURS} are counted for the longest runtime ({stack_runtime:g} h)")
            lines = [
                line if line.runtime_hours is not None else _with_runtime(line, stack_runtime) for line in lines
            ]
    budgets: dict[str, float] = {}
    for r in items:
        budget = _number(r.tags.get(v.TAG_BUDGET_USD))
        if budget is not None and r.type in (AWS_INSTANCE, ALI_INSTANCE):
            budgets[r.experiment] = budget
    with_instance = {line.experiment for line in lines if line.type in (AWS_INSTANCE, ALI_INSTANCE)}
    # Runs by name, then what they share; within a run, the instance first.
    order = sorted({line.experiment for line in lines}, key=lambda name: (name not in with_instance, name))
    kinds = (AWS_INSTANCE, ALI_INSTANCE)
    lines = sorted(lines, key=lambda line: (order.index(line.experiment), line.type not in kinds))
    experiments = []
    for name in order:
        mine = [line for line in lines if line.experiment == name]
        rts = [line.runtime_hours for line in mine if line.runtime_hours is not None]
        experiments.append(
            ExperimentCost(
                name=name,
                shared=name not in with_instance,
                hourly_usd=sum(line.hourly_usd or 0.0 for line in mine),
                max_hourly_usd=sum(line.max_hourly_usd or 0.0 for line in mine),
                runtime_hours=max(rts) if rts else None,
                expected_usd=sum(line.expected_usd or 0.0 for line in mine),
                worst_case_usd=sum(line.worst_case_usd or 0.0 for line in mine),
                after_destroy_monthly_usd=sum(line.after_destroy_monthly_usd for line in mine),
                budget_usd=budgets.get(name),
            )
        )
    clouds = Counter(r.type.split(":", 1)[0] for r in items if r.type.startswith(("aws:", "alicloud:")))
    if any(line.estimate for line in lines):
        pricer.note("spot prices and bucket sizes are estimates; the worst case charges the spot cap (on-demand by default)")
    return StackCost(
        cloud=clouds.most_common(1)[0][0] if clouds else None,
        region=pricer.region,
        hourly_usd=sum(line.hourly_usd or 0.0 for line in lines),
        max_hourly_usd=sum(line.max_hourly_usd or 0.0 for line in lines),
        expected_usd=sum(line.expected_usd or 0.0 for line in lines),
        worst_case_usd=sum(line.worst_case_usd or 0.0 for line in lines),
        after_destroy_monthly_usd=sum(line.after_destroy_monthly_usd for line in lines),
        lines=lines,
        experiments=experiments,
        notes=pricer.notes,
        unknown_prices=pricer.unknown,
        prices_as_of=min(used) if (used := price_dates_used(lines)) else catalog.as_of,
        price_catalog=describe_catalog(catalog),
    )


def price_dates_used(lines: Iterable[CostLine]) -> list[str]:
    """Every price date the lines used (ISO strings)."""
    return [d for line in lines for d in (line.price_as_of, line.cap_as_of) if d]


def _with_runtime(line: CostLine, hours: float) -> CostLine:
    return CostLine(**{**asdict(line), "runtime_hours": hours})
