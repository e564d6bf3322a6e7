"""The registry of compute forms: every way a program can get an instance, and how to read each one.

A *compute form* is a resource type that launches instances (an EC2 instance, an autoscaling group, an EKS node
group, an ESS scaling group ...) or a *template* another form launches from (a launch template, a launch
configuration, an ESS scaling configuration). One ``ComputeForm`` entry per type token says, as paths into the
resource's inputs or small readers, where its instance types, its size, its market (spot or on-demand), its
metadata options, user-data, block devices and tags are, which templates it may take them from, and what bounds
its runtime from outside the instance (its *deadline equivalent*). The policy pack, the cost model and the docs
read these entries; adding a form is one entry in ``aws_forms`` or ``alicloud_forms`` (in the spirit of Cloud
Custodian's resource registry, where a resource type is one class carrying how to enumerate and describe it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gpulease.core.compute.paths import UNKNOWN, number

COMPUTE = "compute"
"""The form launches instances and is billed for them."""
TEMPLATE = "template"
"""The form only describes instances for another form (billed through that form)."""

SPOT, ON_DEMAND, MIXED = "spot", "on-demand", "mixed"
"""Markets: all spot, all on-demand, or a share of on-demand capacity in a spot group."""


@dataclass(frozen=True)
class Market:
    """What a form says about its market: ``kind`` one of the three above, ``None`` when it says nothing (its
    template or the cloud's default decides) or ``UNKNOWN``; ``detail`` names the inputs behind it."""

    kind: Any
    detail: str = ""


@dataclass(frozen=True)
class Metadata:
    """Where a form sets its instance metadata service options."""

    tokens: str
    endpoint: str | None
    hop_limit: str | None
    how: str
    """How to require tokens, as the message's "accepted:" part."""
    unset: str
    """What the service does when ``tokens`` is not set, with its source."""
    default_required: bool = False
    """Tokens are required when ``tokens`` is not set (a Karpenter EC2NodeClass): unset is not reported."""


@dataclass(frozen=True)
class Disk:
    """Block devices of a form: ``path`` reaches one device or, with ``*``, each of a list."""

    label: str
    path: str
    """Dotted path to the device (``*`` for each element of a list); "" for settings on the resource itself."""
    encrypted: str = "encrypted"
    kms_key: str = "kmsKeyId"
    name_key: str | None = None
    """The device's name input, shown after the label (``deviceName``)."""
    only_with: str | None = None
    """Judge the device only when this key is present in it (a launch template mapping with an ``ebs`` block)."""
    missing: str | None = None
    """Reported when a ``*`` path reaches no device to judge and no template decides (a launch template without
    block device mappings: the image's own mappings decide, unseen by a preview)."""


@dataclass(frozen=True)
class UserData:
    path: str
    encoded: bool = False
    """base64 (possibly gzip) by the form's own contract, not only when it looks like it."""


@dataclass(frozen=True)
class TemplateRef:
    """Where a form names a template: an object at ``path`` with an id or a name (``id_key`` / ``name_key``), or a
    plain string at ``path`` (both keys None); ``dependency`` is the top-level input whose property
    dependencies name the template resource."""

    path: str
    id_key: str | None
    name_key: str | None
    dependency: str
    tokens: tuple[str, ...]
    """The template types it may name."""


@dataclass(frozen=True)
class Attached:
    """Templates that name the form instead (an ESS scaling configuration names its scaling group)."""

    token: str
    link: str


@dataclass(frozen=True)
class Deadline:
    """One way the cloud stops the form at its deadline, whatever happens inside the instances.

    ``kind``: ``scheduler`` (an EventBridge Scheduler schedule calling ``target`` with ``requires`` in its input,
    naming the form under ``ids_key``), ``asg-schedule`` (an ``aws.autoscaling.Schedule`` on the group with
    ``requires``), ``expiry`` (the form's own ``time`` input with ``flag`` true), ``release-time`` (the form's own
    ``time`` input) or ``ess-task`` (an ``alicloud.ess.ScheduledTask`` on the group with ``requires``)."""

    kind: str
    accepted: str
    target: str = ""
    ids_key: str = ""
    requires: Mapping[str, Any] = field(default_factory=dict)
    time: str = ""
    flag: str = ""
    link: str = ""
    source: str = ""


@dataclass(frozen=True)
class LinkedHazard:
    """Another resource that, linked to the form, stops its deadline from taking effect."""

    token: str
    path: str
    dependency: str
    problem: Callable[[Mapping[str, Any]], str | None]


def _no_market(props: Mapping[str, Any]) -> Market:
    return Market(None)


def _one(props: Mapping[str, Any]) -> Any:
    return None


def _no_hazards(props: Mapping[str, Any], expires: datetime | None) -> list[str]:
    return []


def _no_gap(props: Mapping[str, Any]) -> str | None:
    return None


def _not_persistent(props: Mapping[str, Any], expires: datetime | None) -> str | None:
    return None


@dataclass(frozen=True)
class ComputeForm:
    token: str
    cloud: str
    label: str
    role: str = COMPUTE
    instance_types: tuple[str, ...] = ("instanceType",)
    """Paths to instance types; a path may reach one type or a list of them. The first path with a value wins."""
    type_reader: Callable[[Mapping[str, Any]], list[Any]] | None = None
    """Instead of ``instance_types``: the types (or family names) a form allows, read by code (a Karpenter
    NodePool's requirements)."""
    accelerator: Callable[[Mapping[str, Any]], str | None] = _no_gap
    """Besides its types, an input that asks for GPUs (an ECI container's ``gpu``, a NodePool's GPU limit): what it
    says, so the unit is judged as accelerated."""
    default_types: tuple[str, ...] = ()
    """The cloud's default when no type is given (EKS node groups: t3.medium)."""
    capacity: Callable[[Mapping[str, Any]], Any] = _one
    """The most instances the form may run at once (a number, ``UNKNOWN``), None for exactly one."""
    desired: Callable[[Mapping[str, Any]], Any] = _one
    """How many it runs when nothing scales it (for the expected cost), None for the capacity."""
    capacity_from_templates: bool = False
    """Its size is its templates' (a SageMaker endpoint runs what its endpoint configuration's variants count)."""
    priced_as: str = ""
    """Why the catalog's instance prices do not apply to it (a service billing its own rates): its worst case is
    then unknown."""
    unsized: str = ""
    """Why its size may be unknown (no limits, a type whose vCPUs the catalog lacks), for the worst case's reason."""
    weights: tuple[str, ...] = ()
    """Paths to per-type weights, when the capacity counts units rather than instances."""
    market: Callable[[Mapping[str, Any]], Market] = _no_market
    spot_how: str = ""
    """How to put it on spot, as a message's "accepted:" part."""
    spot_cap: str | None = None
    """Path to the spot price cap (USD per hour), for the worst case."""
    metadata: Metadata | None = None
    metadata_gap: Callable[[Mapping[str, Any]], str | None] = _no_gap
    """Why this resource cannot require metadata tokens and what can (None when it can, or when its template
    decides)."""
    user_data: tuple[UserData, ...] = ()
    disks: tuple[Disk, ...] = ()
    disk_gap: Callable[[Mapping[str, Any]], str | None] = _no_gap
    """A disk the resource creates but cannot encrypt (an EKS node group or an ECS instance set without a launch
    template), and what can."""
    tags: str | Callable[[Mapping[str, Any]], Mapping[str, Any]] = "tags"
    """Path to its own tags ("" for none), or what reads them (an EC2 Fleet's tag specifications)."""
    instance_tags: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    """For a template: the tags it gives the instances it launches."""
    templates: tuple[TemplateRef, ...] = ()
    attached: tuple[Attached, ...] = ()
    deadlines: tuple[Deadline, ...] = ()
    unbounded: str = ""
    """When no deadline fits the form: why, and what would bound the GPUs instead."""
    hazards: Callable[[Mapping[str, Any], datetime | None], list[str]] = _no_hazards
    """Its own settings that would keep instances running past a deadline action (given its expires-at)."""
    persistent: Callable[[Mapping[str, Any], datetime | None], str | None] = _not_persistent
    """A persistent spot request behind the form, which terminating its instance re-opens: why (None when there is
    none, or when the request's own end comes by the given expires-at). Reported unless ``cancels`` holds."""
    cancels: Deadline | None = None
    """A schedule that cancels the form's persistent request (its target and the key naming the request), which
    ends the request as its own end would, when it fires by the deadline and before the termination."""
    decoys: tuple[tuple[str, str], ...] = ()
    """Inputs that look like a deadline but are not one: (path, why), named when no deadline is found."""
    linked_hazards: tuple[LinkedHazard, ...] = ()
    public_ip: tuple[str, ...] = ()
    """Paths whose true (or positive) value gives an instance a public address."""
    security_groups: tuple[str, ...] = ()
    identity: tuple[str, ...] = ("id",)
    """Inputs/outputs other resources may name it by (id, name, ARN)."""
    source: str = ""
    """The provider documentation the entry was written from."""


FORMS: dict[str, ComputeForm] = {}


def register(*forms: ComputeForm) -> None:
    for form in forms:
        if form.token in FORMS:
            raise ValueError(f"compute form {form.token} registered twice")
        FORMS[form.token] = form


def form_of(type_: str) -> ComputeForm | None:
    return FORMS.get(type_)


def compute_tokens() -> tuple[str, ...]:
    return tuple(t for t, f in FORMS.items() if f.role == COMPUTE)


def template_tokens() -> tuple[str, ...]:
    return tuple(t for t, f in FORMS.items() if f.role == TEMPLATE)


def distribution(base: Any, percent: Any, detail_names: tuple[str, str], default_percent: float = 100) -> Market:
    """Market of a group mixing on-demand and spot: ``base`` on-demand instances first, then ``percent`` on-demand
    of the rest (AWS InstancesDistribution and Alibaba ESS / ACK use the same pair)."""
    b, p = number(base), number(percent)
    if UNKNOWN in (b, p):
        return Market(UNKNOWN)
    b = b or 0
    p = default_percent if p is None else p
    detail = f"{detail_names[0]}={b:g}, {detail_names[1]}={p:g}" + (" (the default)" if percent is None else "")
    if b == 0 and p == 0:
        return Market(SPOT, detail)
    if p >= 100:
        return Market(ON_DEMAND, detail)
    return Market(MIXED, detail)
