"""What a stack costs: per hour while it runs, at worst until its deadline, and per month after destroy.

``estimate_resources`` reads resource inputs in engine form (camelCase, exactly what ``gpulease.review.render`` captures
and what the policy pack sees) and prices them from the catalog:

- instance hours: on-demand, or for spot the current spot price of the instance's zone when a refresh recorded
  it, else the catalog's typical discount (an estimate; ``gpulease.core.cost.spot``); the worst case charges the
  spot cap (``maxPrice`` / ``spotPriceLimit``, else the on-demand price, which is the cap both clouds apply);
- root and data disks by type and size (plus provisioned IOPS and throughput), a public IPv4 address;
- the checkpoint bucket: its size is not known before training, so it is assumed to hold as much as the data
  disks (checkpoints are synced from them) unless an ``estimatedGb`` option says otherwise;
- worst case = each resource's hourly cap × its ``gpulease:max-runtime-hours`` tag, summed; what keeps billing
  after destroy = retained disks and buckets (``retainOnDelete`` option or ``gpulease:retain=true``), per month;
- every compute form (``gpulease.core.compute``: an instance, or an autoscaling group, fleet, node group or
  pool, ESS group, instance set times its max size, ``gpulease.core.cost.compute``), its types read through
  the templates it launches from; a resource of a type the model does not price and does not know to be free
  (``gpulease.core.resources.FREE_TYPES``) is listed as unpriced, never counted as $0; when an instance line has
  no price the worst case is unknown (``worst_case_known``), never a smaller number presented as the bound.

The region of each resource is its own ``region`` input, else its explicit provider's (the ``region`` option;
an explicit provider without one: no region), else its own cloud's in ``region`` (the stack's configured
``aws:region`` / ``alicloud:region``, ``region.configured_regions``), else the one its cloud's inputs name; an
AWS resource is never priced in Alibaba's region, nor the reverse.

Every line carries the date of the price behind its figure (``price_as_of``; ``cap_as_of`` for the worst case when
it differs), so a report can name how old each number is (``gpulease.core.catalog.freshness``).

Each resource is a ``(type, inputs)`` pair, or ``(type, inputs, options)`` where options may hold ``name``,
``retainOnDelete``, ``estimatedGb``, ``region`` (its explicit provider's), ``explicitProvider`` (true when it names
an explicit provider: without a ``region`` it is priced in none, never the stack's), ``urn`` and ``dependencies``
(per input, the URNs it depends on: how a group finds the launch template it names).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from typing import Any

from gpulease.core import resources as rt
from gpulease.core import vocabulary as v
from gpulease.core.catalog import Catalog, load_catalog
from gpulease.core.catalog.freshness import describe_catalog
from gpulease.core.compute import ComputeUnit, Registered, compute_units, form_of
from gpulease.core.compute.cloudformation import STACK as CLOUDFORMATION_STACK
from gpulease.core.compute.forms import COMPUTE
from gpulease.core.compute.launch_calls import COMMANDS, SCHEDULE, command_launch, schedule_launch
from gpulease.core.compute.units import RESIZERS
from gpulease.core.cost.compute import group_instances
from gpulease.core.cost.lines import CostLine, ExperimentCost, StackCost, price_dates_used
from gpulease.core.cost.pricing import (
    ALI_DEFAULT_DISK_CATEGORY,
    AWS_DEFAULT_VOLUME_TYPE,
    DEFAULT_BUCKET_GB,
    PricedResource,
    Pricer,
    ali_instance,
    aws_instance,
)
from gpulease.core.cost.region import derive_region
from gpulease.core.cost.spot import experiment_zones
from gpulease.core.cost.stopped import stopped_by_reclaim, stopped_hourly, stopped_note


def estimate_resources(
    resources: Iterable[tuple[str, Mapping[str, Any]] | tuple[str, Mapping[str, Any], Mapping[str, Any]]],
    region: str | Mapping[str, str] | None = None,
    *,
    catalog: Catalog | None = None,
) -> StackCost:
    """Price engine-form resource inputs. ``region`` is the stack's region, or per cloud (``{"aws": "us-east-1",
    "alicloud": "cn-hangzhou"}``, ``region.configured_regions``) for a stack on both clouds; a cloud without one
    takes the region its own resources' inputs name (``region.derive_region``)."""
    items = [
        PricedResource(type=entry[0], inputs=entry[1] or {}, options=(entry[2] if len(entry) > 2 else None) or {})
        for entry in resources
    ]
    catalog = catalog or load_catalog()
    regions = dict(region) if isinstance(region, Mapping) else {}
    stack_region = region if isinstance(region, str) and region else None
    for cloud in sorted({r.cloud for r in items if r.cloud} - set(regions)):
        found = stack_region or derive_region(r.inputs for r in items if r.cloud == cloud)
        if found:
            regions[cloud] = found
    default = regions.get(_main_cloud(items) or "") or stack_region or derive_region(r.inputs for r in items)
    pricer = Pricer(catalog, default)
    pricer.zones = experiment_zones((r.type, r.inputs, r.experiment) for r in items)
    units = _units(items)
    for index, unit in units.items():
        if not unit.form.tags:  # no tags of its own: its templates' instance tags carry the experiment and runtime
            items[index].template_tags = {k: x for k, x in unit.tags.items() if isinstance(x, str)}
    data_gb = 0.0
    for r in items:
        if r.type in (rt.AWS_VOLUME, *rt.ALI_DISKS):
            data_gb += rt.number(r.inputs.get("size")) or 0.0
    basis = "as much as the data disks" if data_gb else "no data disk to go by"
    for index, r in enumerate(items):
        pricer.region = _region_of(r, regions, default)
        pricer.experiment = r.experiment
        _price(pricer, r, units.get(index), data_gb, basis)
        for hosted in r.hosted:  # what a CloudFormation stack's template runs, priced as the stack's lines
            group_instances(pricer, r, hosted)
    pricer.region, pricer.experiment = default, None
    # An instance stopped by a reclaim: its own market options, else the launch template's it takes them from.
    reclaim_stops = {r.experiment for index, r in enumerate(items) if stopped_by_reclaim(
        r.type, r.inputs, [t.props for t in units[index].templates] if index in units else ())}
    return _summarise(pricer, items, catalog, reclaim_stops)


def _region_of(r: PricedResource, regions: Mapping[str, str], default: str | None) -> str | None:
    """Where ``r`` is priced: its own region (its input, its explicit provider's), else its cloud's (each cloud's
    default provider reads its own config key), never another cloud's; None for a resource on an explicit provider
    that names no region: that provider reads no stack config (its region comes from the environment at
    ``pulumi up``, unseen here), so it is priced nowhere rather than in the stack's region."""
    if r.region:
        return r.region
    if r.options.get("explicitProvider"):
        return None
    return regions.get(r.cloud) if r.cloud else default


def is_compute(type_: str) -> bool:
    """A type whose resources run (and bill for) instances: a compute form of ``gpulease.core.compute``."""
    form = form_of(type_)
    return form is not None and form.role == COMPUTE


def _units(items: list[PricedResource]) -> dict[int, ComputeUnit]:
    """Each compute-form item's unit, by its index (``gpulease.core.compute``), templates resolved."""
    regs = [
        Registered(type=r.type, name=r.name, urn=str(r.options.get("urn") or f"#{i}"), props=r.inputs,
                   dependencies=r.options.get("dependencies") or {})
        for i, r in enumerate(items)
    ]
    index = {reg.urn: i for i, reg in enumerate(regs)}
    out: dict[int, ComputeUnit] = {}
    for u in compute_units([reg for reg in regs if form_of(reg.type) is not None or reg.type == CLOUDFORMATION_STACK
                            or reg.type in RESIZERS]):
        if u.resource.host:
            items[index[u.resource.host]].hosted.append(u)
        else:
            out[index[u.resource.urn]] = u
    return out


def _price(pricer: Pricer, r: PricedResource, unit: ComputeUnit | None, data_gb: float, basis: str) -> None:
    i = r.inputs
    if r.type in (rt.AWS_INSTANCE, rt.AWS_SPOT_REQUEST):
        aws_instance(pricer, r, unit)
    elif r.type == rt.ALI_INSTANCE:
        ali_instance(pricer, r, unit)
    elif unit is not None:
        group_instances(pricer, r, unit)
    elif r.type == rt.AWS_VOLUME:
        pricer.disk(
            r, "aws", "data disk", rt.number(i.get("size")), str(i.get("type") or AWS_DEFAULT_VOLUME_TYPE),
            iops=rt.number(i.get("iops")), throughput=rt.number(i.get("throughput")), retained=r.retained,
        )
    elif r.type == rt.AWS_EIP:
        pricer.public_ip(r, "aws")
    elif r.type in rt.AWS_BUCKETS:
        pricer.bucket(r, "aws", data_gb or DEFAULT_BUCKET_GB, basis)
    elif r.type in rt.ALI_DISKS:
        pricer.disk(
            r, "alicloud", "data disk", rt.number(i.get("size")), str(i.get("category") or ALI_DEFAULT_DISK_CATEGORY),
            i.get("performanceLevel") or None, retained=r.retained,
        )
    elif r.type == rt.ALI_BUCKET:
        pricer.bucket(r, "alicloud", data_gb or DEFAULT_BUCKET_GB, basis)
    elif (r.type == SCHEDULE or r.type in COMMANDS) and (
            launch := schedule_launch(i) if r.type == SCHEDULE else command_launch(i)):
        pricer.unknown_price(f"{r.name}: the instances it launches are not priced (it {launch})")
        pricer.add(r, "instances it launches (price unknown)", None, compute=True)
    elif form_of(r.type) is None and not rt.is_free_type(r.type):
        size = next((x for key in SIZE_KEYS if isinstance(x := i.get(key), str) and x), None)
        pricer.unknown_price(f"not priced: {r.type} {r.name!r}{' ' + size if size else ''} (a resource type the "
                             "estimate does not price)")


def _summarise(pricer: Pricer, items: list[PricedResource], catalog: Catalog, reclaim_stops: set[str]) -> StackCost:
    lines = pricer.lines
    unpriced = {key: list(found) for key, found in pricer.unknown_of.items()}  # prices only, before the runtime
    runtimes = [hours for r in items if (hours := r.runtime_hours) is not None]
    stack_runtime = max(runtimes) if runtimes else None
    no_runtime: list[str] = []
    if any(line.runtime_hours is None for line in lines):
        if stack_runtime is None:
            no_runtime.append(f"max runtime: no resource carries {v.TAG_MAX_RUNTIME_HOURS}, so no worst case")
            pricer.unknown_price(no_runtime[0])
        else:
            pricer.note(f"resources without {v.TAG_MAX_RUNTIME_HOURS} are counted for the longest runtime ({stack_runtime:g} h)")
            lines = [
                line if line.runtime_hours is not None else _with_runtime(line, stack_runtime) for line in lines
            ]
    budgets: dict[str, float] = {}
    for r in items:
        budget = rt.number(r.tags.get(v.TAG_BUDGET_USD))
        if budget is not None and is_compute(r.type):
            budgets[r.experiment] = budget
    with_instance = {line.experiment for line in lines if line.compute}
    # Runs by name, then what they share; within a run, the instances (and their own disks and addresses) first.
    order = sorted({line.experiment for line in lines}, key=lambda name: (name not in with_instance, name))
    lines = sorted(lines, key=lambda line: (order.index(line.experiment), not is_compute(line.type)))
    unknown = {line.experiment for line in lines if line.compute and line.worst_case_usd is None}
    stack_wide = pricer.unknown_of.get(None, [])
    stopped = {name: None if name in pricer.unsized else stopped_hourly(line for line in lines if line.experiment == name)
               for name in sorted(reclaim_stops)}
    for text in stopped_note(stopped) if stopped else []:
        pricer.note(text)
    experiments = []
    for name in order:
        mine = [line for line in lines if line.experiment == name]
        rts = [line.runtime_hours for line in mine if line.runtime_hours is not None]
        hourly_missing = _unpriced([*unpriced.get(None, []), *unpriced.get(name, [])], mine)
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
                stopped_hourly_usd=stopped.get(name),
                worst_case_known=not (missing := [*stack_wide, *pricer.unknown_of.get(name, [])]) and name not in unknown,
                worst_case_reason=_reason(missing) if missing or name in unknown else None,
                hourly_reason=_joined(hourly_missing),
                expected_reason=_joined([*hourly_missing, *no_runtime]),
                after_destroy_reason=_joined(_unpriced_retained(mine)),
            )
        )
    if any(line.estimate for line in lines):
        pricer.note("spot prices and bucket sizes are estimates; the worst case charges the spot cap (on-demand by default)")
    hourly_missing = _unpriced([x for found in unpriced.values() for x in found], lines)
    return StackCost(
        cloud=_main_cloud(items),
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
        worst_case_known=not unknown and not pricer.unknown,
        worst_case_reason=_reason(pricer.unknown) if unknown or pricer.unknown else None,
        stopped_hourly_usd=(None if not stopped or None in stopped.values()
                            else sum(x for x in stopped.values() if x is not None)),
        hourly_reason=_joined(hourly_missing),
        expected_reason=_joined([*hourly_missing, *no_runtime]),
        after_destroy_reason=_joined(_unpriced_retained(lines)),
    )


def _unpriced(missing: list[str], lines: list[CostLine]) -> list[str]:
    """What keeps the hourly figures from being known: the unknown prices, and any line without a price that
    they do not name (never summed as $0)."""
    found = list(dict.fromkeys(missing))
    if not found:
        found = [f"{line.resource}: {line.item} is not priced" for line in lines
                 if line.hourly_usd is None or line.max_hourly_usd is None]
    return found


def _unpriced_retained(lines: list[CostLine]) -> list[str]:
    """The retained items without a price: what keeps billing after destroy is then not known."""
    return [f"{line.resource}: {line.item} is retained and not priced" for line in lines
            if line.retained and line.hourly_usd is None]


def _joined(found: list[str]) -> str | None:
    return "; ".join(dict.fromkeys(found)) or None


SIZE_KEYS = ("instanceClass", "instanceType", "nodeType", "dbInstanceClass")
"""Inputs that size a resource the estimate does not price, named in its unknown-price entry."""


def _reason(missing: list[str]) -> str:
    return "; ".join(missing) or "an instance has no price or no runtime"


def _main_cloud(items: list[PricedResource]) -> str | None:
    """The cloud the stack's compute runs on (the most compute resources), else the one most resources are on."""
    clouds = Counter(r.cloud for r in items if r.cloud and is_compute(r.type)) or Counter(
        r.cloud for r in items if r.cloud)
    return clouds.most_common(1)[0][0] if clouds else None



def _with_runtime(line: CostLine, hours: float) -> CostLine:
    return CostLine(**{**asdict(line), "runtime_hours": hours})
