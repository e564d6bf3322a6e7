"""When the cloud has no capacity for the instance at first creation: which other zone or type the spec allows, in
price order, and how one is tried.

The codes: AWS answers ``InsufficientInstanceCapacity`` when it has no capacity for the type in the zone (the EC2
API's error codes, https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html); Alibaba Cloud
answers ``OperationDenied.NoStock`` when the zone has sold out of it (the code its own answers name,
https://developer.aliyun.com/ask/274162; ECS's text: "The requested resource is sold out in the specified zone,
try other types of resources or other regions and zones"). The code is found in the failed update's error text.

What the spec *allows*: an instance type it names (``gpu.instanceType``) allows that type only; requirements
(``gpu.gpuMemoryGb`` / ``model`` / ``count``) or a workload (``gpu.fit``) allow every catalog type that meets them,
as ``gpulease size`` lists them. A zone it names (``network.availabilityZone``), a subnet (``network.subnetId``,
which lives in one zone) or a disk it reattaches (``dataDisk.existingVolumeId``) allow that zone only; otherwise
every zone of the region that offers the type (AWS: EC2 ``DescribeInstanceTypeOfferings``, the lookup the program
places with). A spec that allows nothing else is told so, and nothing is retried.

Nothing that holds data moves: when the failed update had already created a data disk, only other types in that
zone remain (a disk cannot follow an instance to another zone). A try pins the choice through a config file given
to that one update (``pulumi up --config-file``): ``gpu: {instanceType: T}`` and ``network.availabilityZone: Z``;
the stack file itself is never written."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.spec.experiment import ExperimentSpec
from gpulease.core.catalog import load_catalog
from gpulease.core.money import usd_per_hour
from gpulease.core.resources import DATA_DISK_TYPES
from gpulease.core.sizing import find_offers
from gpulease.core.sizing.resolve import resolve_instance_type
from gpulease.ephemeral.backend import ResourceEvent

CAPACITY_CODES = {"aws": ("InsufficientInstanceCapacity",), "alicloud": ("OperationDenied.NoStock",)}
MAX_TRIES = 6
"""Tries in all, the first included: each is a full update, minutes long; a region that has none of six choices is
better told to the user than tried on."""


def capacity_code(cloud: str, text: str) -> str | None:
    return next((code for code in CAPACITY_CODES.get(cloud, ()) if code in text), None)


@dataclass(frozen=True)
class Choice:
    instance_type: str
    zone: str | None  # None: the program's own choice (the first zone offering the type)
    hourly_usd: float

    def label(self) -> str:
        return f"{self.instance_type} in {self.zone or 'the first zone offering it'} ({usd_per_hour(self.hourly_usd)})"


def fixed_zone(exp: ExperimentSpec) -> tuple[str | None, str | None]:
    """(the zone, why) when the spec pins one; (None, None) when any zone of the region is allowed."""
    net = exp.network
    if net.availability_zone:
        return net.availability_zone, "network.availabilityZone"
    if net.subnet_id:
        return "", "network.subnetId (a subnet lives in one zone)"
    if exp.data_disk.existing_volume_id:
        return "", "dataDisk.existingVolumeId (the disk's zone)"
    return None, None


def allowed_types(exp: ExperimentSpec, cloud: str, region: str) -> list[tuple[str, float]]:
    """(type, price for the spec's market) of every type the spec's ``gpu`` allows, cheapest first."""
    catalog = load_catalog()
    gpu = exp.gpu
    spot = exp.market == "spot"
    if gpu.instance_type is not None:
        it = resolve_instance_type(cloud, region, gpu, nodes=exp.nodes)
        return [(it.type, it.prices.get(region, 0.0) * ((1 - it.spot_discount) if spot else 1))]
    if gpu.fit is not None:
        found = find_offers(gpu.fit.workload(), catalog, cloud, region, gpus=gpu.fit.gpus or gpu.explicit_count,
                            headroom=gpu.fit.headroom, model=gpu.model, nodes=exp.nodes)
        pairs = [(o.instance.type, o.spot_usd if spot else o.on_demand_usd) for o in found]
    else:
        found_types = catalog.offers(cloud, region, gpu_memory_gb=gpu.gpu_memory_gb, count=gpu.count, model=gpu.model)
        pairs = [(it.type, it.prices[region] * ((1 - it.spot_discount) if spot else 1)) for it in found_types]
    return sorted(pairs, key=lambda p: (p[1], p[0]))


def choices(exp: ExperimentSpec, cloud: str, region: str, zones_of: Callable[[str], list[str]]) -> list[Choice]:
    """Every (type, zone) the spec allows, the program's own choice first, then by price, type and zone."""
    zone, _ = fixed_zone(exp)
    out: list[Choice] = []
    for itype, price in allowed_types(exp, cloud, region):
        zones: list[str | None] = [zone or None] if zone is not None else [*(zones_of(itype) or [None])]
        out += [Choice(itype, z, round(price, 4)) for z in zones]
    first_type = resolve_instance_type(cloud, region, exp.gpu, nodes=exp.nodes).type
    first = next((c for c in out if c.instance_type == first_type), None)
    rest = sorted((c for c in out if c is not first), key=lambda c: (c.hourly_usd, c.instance_type, c.zone or ""))
    return [first, *rest] if first else rest


def holds_data(events: Iterable[ResourceEvent]) -> bool:
    """Whether the failed update created a data disk (finished creates of a disk type)."""
    return any(e.done and not e.failed and e.op == "create" and e.type in DATA_DISK_TYPES for e in events)


def next_choice(remaining: list[Choice], tried: list[Choice], data_zone: str | None) -> Choice | None:
    """The first untried choice; once a data disk exists (``data_zone``: its zone, or "" when the program chose
    it and it is not known here) only choices in that very zone remain."""
    for choice in remaining:
        if choice in tried:
            continue
        if data_zone is not None and (not data_zone or choice.zone != data_zone):
            continue
        return choice
    return None


def why_none(exp: ExperimentSpec) -> str:
    zone, because = fixed_zone(exp)
    parts = []
    if exp.gpu.instance_type is not None:
        parts.append(f"gpu.instanceType names {exp.gpu.instance_type} only")
    if zone is not None:
        parts.append(f"the zone is fixed by {because}")
    if not parts:
        parts.append("no other type or zone in the region meets gpu")
    return ("the spec allows no other zone or type: " + "; ".join(parts) + "; accepted: gpu requirements or fit "
            "instead of instanceType, no pinned zone, or another region")


def pinned_gpu(gpu: dict[str, Any], choice: Choice, cloud: str) -> dict[str, Any]:
    """The ``gpu`` section of a try: the chosen type, with the GPU count the user's ``fit`` (``gpus``) or
    requirements (``count``) asked for kept as ``count``, which the program checks against the type (a pinned
    type that disagreed would be refused offline, not deployed). The choice itself was taken from the types the
    user's fit or requirements allow (``allowed_types``: the same workload, headroom, GPU count and model)."""
    pinned: dict[str, Any] = {"instanceType": choice.instance_type}
    fit = gpu.get("fit") if isinstance(gpu.get("fit"), dict) else {}
    count = fit.get("gpus", gpu.get("count"))
    if count is None and (fit or "gpuMemoryGb" in gpu or "model" in gpu):
        known = load_catalog().get(cloud, choice.instance_type)
        count = known.gpu_count if known is not None else None
    if count is not None:
        pinned["count"] = count
    return pinned


def pinned_config(document: dict[str, Any], experiment_key: str, choice: Choice,
                  cloud: str = "aws") -> dict[str, Any]:
    """The stack file's document with ``choice`` pinned in the experiment (the document itself is not changed)."""
    out = copy.deepcopy(document)
    exp = out["config"][experiment_key]
    exp["gpu"] = pinned_gpu(exp.get("gpu") or {}, choice, cloud)
    if choice.zone:
        exp.setdefault("network", {})["availabilityZone"] = choice.zone
    return out


def write_pinned(document: dict[str, Any], experiment_key: str, choice: Choice, folder: Path,
                 cloud: str = "aws") -> Path:
    """The pinned copy as a file for ``--config-file`` (JSON is YAML; the secrets' salt and provider come along)."""
    path = folder / f"pinned-{choice.instance_type}-{choice.zone or 'any'}.yaml"
    path.write_text(json.dumps(pinned_config(document, experiment_key, choice, cloud), indent=2, default=str) + "\n")
    return path


def review_pinned(path: Path, stack: str, overrides: dict[str, Any]) -> Any:
    """``gpulease plan``'s verdict (``lifecycle.verdict``) of the stack file with ``overrides`` laid over its
    config (the engine's ``--config`` path): the same review, budget verdict included, that ``up`` ran first."""
    from gpulease.lifecycle.verdict import summarize
    from gpulease.review.engine import review

    [found] = review([str(path)], overrides=overrides)
    return summarize(found, stack)


REVIEW_PINNED: Callable[[Path, str, dict[str, Any]], Any] = review_pinned
"""How a fallback choice is reviewed (a test replaces it)."""


def refused(path: Path, stack: str, document: dict[str, Any], experiment_key: str, choice: Choice,
            cloud: str) -> str | None:
    """Why the review refuses ``choice`` pinned (its worst case over ``budgetUsd``, or any other mandatory
    finding), in one line; None when it passes. A fallback the review would FAIL is never tried."""
    pinned = pinned_config(document, experiment_key, choice, cloud)["config"][experiment_key]
    found = REVIEW_PINNED(path, stack, {experiment_key: pinned})
    if not found.blocks:
        return None
    first = found.mandatory[0] if found.mandatory else None
    why = (f"{first['policy']}: {first['message']}" if first else found.error or f"review {found.status}")
    why = why if len(why) <= 300 else why[:300] + "…"
    return f"skipping {choice.label()}: the review would refuse it ({why})"


def aws_zones(region: str) -> Callable[[str], list[str]]:
    """The zones offering a type (EC2 DescribeInstanceTypeOfferings), sorted as the program sorts them."""
    import boto3
    from botocore.config import Config

    client = boto3.client("ec2", region_name=region, config=Config(connect_timeout=5, read_timeout=15,
                                                                    retries={"mode": "standard", "max_attempts": 3}))

    def zones(instance_type: str) -> list[str]:
        found: set[str] = set()
        pages = client.get_paginator("describe_instance_type_offerings").paginate(
            LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": [instance_type]}],
            PaginationConfig={"MaxItems": 200})
        for page in pages:
            found |= {o["Location"] for o in page.get("InstanceTypeOfferings", [])}
        return sorted(found)

    return zones


def no_zones(region: str) -> Callable[[str], list[str]]:
    """Alibaba Cloud: the program asks for the zones at lookup time; here only the type changes."""
    return lambda instance_type: []


ZONES: dict[str, Callable[[str], Callable[[str], list[str]]]] = {"aws": aws_zones, "alicloud": no_zones}
"""How the zones offering a type are found, per cloud (a test replaces it)."""
