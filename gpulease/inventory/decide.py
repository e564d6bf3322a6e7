"""What a sweep does to each managed resource, and why: one implementation for every cloud.

Pure: an inventory (``gpulease.inventory.resources``) and a clock in, decisions out; no API calls. Each cloud only
lists (into the shared records and states) and acts; the rules live here.

Safety rules, in order:
- only resources tagged ``gpulease:managed-by=gpulease`` are decided on (the listings filter server-side; the tag
  is checked again here on every record, whatever the listing did);
- nothing without a valid ``gpulease:expires-at`` is touched, and nothing before that deadline plus a grace period;
- a volume (EBS volume, ECS disk) is deleted only when unattached, ``available`` and explicitly tagged
  ``gpulease:retain=false`` (a missing or unreadable retain tag counts as retained);
- a volume tagged ``gpulease:phase=parked`` (its stack is parked: the disk is what parking keeps) is never
  deleted, whatever its retain and expires-at tags say;
- ``gpulease:retain=true`` protects any resource; buckets are listed but never deleted;
- snapshots and images are deleted only after their ``gpulease:retain-until`` (or their creation plus the
  retention period), and never before their experiment's deadline.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from gpulease.core import resources as rt
from gpulease.core.vocabulary import (
    PHASE_PARKED,
    TAG_EXPIRES_AT,
    TAG_PHASE,
    TAG_RETAIN,
    TAG_RETAIN_UNTIL,
    is_managed,
    parse_rfc3339,
    rfc3339,
)
from gpulease.inventory.resources import (
    Address,
    Image,
    Instance,
    RegionInventory,
    Resource,
    Snapshot,
    SpotRequest,
    Volume,
)

# Actions.
TERMINATE = "terminate"
CANCEL = "cancel-spot-request"
RELEASE = "release"
DELETE = "delete"
SNAPSHOT_AND_DELETE = "snapshot-and-delete"
KEEP = "keep"

DEFAULT_GRACE = timedelta(hours=1)
DEFAULT_SNAPSHOT_RETENTION = timedelta(days=30)
DEFAULT_BATCH = 1000


@dataclass(frozen=True)
class ReapSettings:
    now: datetime
    grace: timedelta = DEFAULT_GRACE
    snapshot_before_delete: bool = False
    snapshot_retention: timedelta = DEFAULT_SNAPSHOT_RETENTION
    execute: bool = False
    workers: int = 8
    batch_size: int = DEFAULT_BATCH


@dataclass(frozen=True)
class Tagged:
    """A managed resource known from its deciding tags only: what the sweep keeps without describing it."""

    kind: str
    id: str
    region: str
    tags: dict[str, str]


@dataclass(frozen=True)
class Decision:
    resource: Resource | Tagged
    action: str
    reason: str


def _ago(delta: timedelta) -> str:
    hours = delta.total_seconds() / 3600
    return f"{hours / 24:.1f}d" if abs(hours) >= 48 else f"{hours:.1f}h"


def deadline(tags: dict[str, str]) -> tuple[datetime | None, str]:
    """The resource's ``expires-at`` (or None and why not)."""
    raw = tags.get(TAG_EXPIRES_AT)
    if not raw:
        return None, f"no {TAG_EXPIRES_AT} tag"
    try:
        return parse_rfc3339(raw), ""
    except ValueError:
        return None, f"{TAG_EXPIRES_AT}={raw!r} is not an RFC 3339 time"


def retain(tags: dict[str, str]) -> bool | None:
    """True/False when the retain tag says so; None when it is missing or unreadable, which the reaper, since it
    deletes, always reads as retained (``gpulease.core.resources.retain_tag``: the tag's one reading)."""
    return rt.retain_tag(tags)


def expiry_check(tags: dict[str, str], settings: ReapSettings) -> tuple[bool, str]:
    """(past deadline + grace, why)."""
    moment, problem = deadline(tags)
    if moment is None:
        return False, f"{problem}; never swept"
    if settings.now >= moment + settings.grace:
        return True, f"expired at {rfc3339(moment)} ({_ago(settings.now - moment)} ago)"
    if settings.now >= moment:
        return False, f"expired at {rfc3339(moment)}; in the grace period until {rfc3339(moment + settings.grace)}"
    return False, f"expires at {rfc3339(moment)} (in {_ago(moment - settings.now)})"


def decide_instance(inst: Instance, settings: ReapSettings) -> Decision:
    expired, why = expiry_check(inst.tags, settings)
    if expired and inst.release_time is not None:
        # ECS should have released it at its release time; it is still here, so the sweep does it.
        why += f"; release time {rfc3339(inst.release_time)} did not release it"
    return Decision(inst, TERMINATE if expired else KEEP, why)


def decide_address(addr: Address, settings: ReapSettings) -> Decision:
    if addr.association_id or addr.instance_id:
        return Decision(addr, KEEP, f"associated with {addr.instance_id or addr.association_id}")
    if addr.state is not None and addr.state != "available":
        return Decision(addr, KEEP, f"state is {addr.state}")
    if retain(addr.tags) is True:
        return Decision(addr, KEEP, f"{TAG_RETAIN}=true")
    expired, why = expiry_check(addr.tags, settings)
    return Decision(addr, RELEASE if expired else KEEP, f"unassociated; {why}")


def decide_volume(vol: Volume, settings: ReapSettings, terminating: set[str]) -> Decision:
    if vol.attached_to:
        ids = ", ".join(vol.attached_to)
        later = " (being terminated; a later sweep decides)" if terminating & set(vol.attached_to) else ""
        return Decision(vol, KEEP, f"attached to {ids}{later}")
    if vol.state != "available":
        return Decision(vol, KEEP, f"state is {vol.state}")
    kept = kept_for_retain(vol, vol.tags)
    if kept is not None:
        return kept
    expired, why = expiry_check(vol.tags, settings)
    if not expired:
        return Decision(vol, KEEP, f"unattached; {why}")
    action = SNAPSHOT_AND_DELETE if settings.snapshot_before_delete else DELETE
    return Decision(vol, action, f"unattached, {TAG_RETAIN}=false, {why}")


def kept_for_retain(resource: Resource | Tagged, tags: dict[str, str]) -> Decision | None:
    """A volume's retain rule: kept while its stack is parked, and unless explicitly ``retain=false``."""
    phase = tags.get(TAG_PHASE)
    if isinstance(phase, str) and phase.strip().lower() == PHASE_PARKED:
        return Decision(resource, KEEP, f"{TAG_PHASE}={PHASE_PARKED}: its stack is parked and keeps this disk")
    value = retain(tags)
    if value is True:
        return Decision(resource, KEEP, f"{TAG_RETAIN}=true")
    if value is None:
        return Decision(resource, KEEP, f"no readable {TAG_RETAIN} tag; treated as retained")
    return None


def _decide_copy(resource: Snapshot | Image, ready: str, created: datetime | None, settings: ReapSettings) -> Decision:
    """Snapshots and images: kept while retained, not ready, before their experiment's deadline or their
    retention end (``retain-until``, else creation + the retention period)."""
    if retain(resource.tags) is True:
        return Decision(resource, KEEP, f"{TAG_RETAIN}=true")
    if resource.state != ready:
        return Decision(resource, KEEP, f"state is {resource.state}")
    moment, _ = deadline(resource.tags)
    if moment is not None and settings.now < moment:
        return Decision(resource, KEEP, f"its experiment runs until {rfc3339(moment)}")
    raw = resource.tags.get(TAG_RETAIN_UNTIL)
    if raw:
        try:
            until = parse_rfc3339(raw)
        except ValueError:
            return Decision(resource, KEEP, f"{TAG_RETAIN_UNTIL}={raw!r} is not an RFC 3339 time")
        source = TAG_RETAIN_UNTIL
    elif created is not None:
        until = created + settings.snapshot_retention
        source = f"start + {settings.snapshot_retention.days}d retention"
    else:
        return Decision(resource, KEEP, "no start time and no retain-until tag")
    if settings.now >= until:
        return Decision(resource, DELETE, f"retention ended at {rfc3339(until)} ({source})")
    return Decision(resource, KEEP, f"retained until {rfc3339(until)} ({source})")


def decide_snapshot(snap: Snapshot, settings: ReapSettings) -> Decision:
    return _decide_copy(snap, "completed", snap.start_time, settings)


def decide_image(image: Image, settings: ReapSettings) -> Decision:
    decision = _decide_copy(image, "available", image.create_time, settings)
    if decision.action == DELETE and image.snapshot_ids:
        # A baked AMI goes with the snapshots it was made into (a dry run says which).
        return Decision(image, DELETE, f"{decision.reason}; with its snapshots {', '.join(image.snapshot_ids)}")
    return decision


def kept_by_tags(kind: str, rid: str, region: str, tags: dict[str, str], settings: ReapSettings) -> Decision | None:
    """The keep decision that a resource's deciding tags alone support, or None when it is a candidate (which is
    then described before anything is decided: tags alone never lead to an action)."""
    resource = Tagged(kind, rid, region, tags)
    if kind == "volume":
        kept = kept_for_retain(resource, tags)
        if kept is not None:
            return kept
    expired, why = expiry_check(tags, settings)
    return None if expired else Decision(resource, KEEP, why)


def decide_spot_requests(
    requests: list[SpotRequest], instance_decisions: list[Decision], settings: ReapSettings
) -> tuple[list[Decision], list[Decision]]:
    """The spot requests' decisions, and the instances' decisions they amend: the one place that ties a request to
    its instance, whichever side found it.

    - An instance being terminated has its request cancelled first (the acting side cancels before it
      terminates, and terminates nothing whose cancel failed): a persistent request would launch a replacement.
    - An instance whose request is listed but not managed is not terminated either: the request is not ours to
      cancel, and without the cancel a persistent request would launch another instance.
    - A request managed by its own tags whose deadline plus the grace period has passed is cancelled even while an
      instance without gpulease tags holds it (what a re-opened persistent request launches: RunInstances' tags
      are not on it), and that instance is terminated after the cancel, judged by the request's tags.
    - Any other managed request is kept while an instance holds it, and cancelled once its deadline (its own
      tags', else its instance's) plus the grace period has passed. ``retain`` does not apply: a request holds no
      data, and keeping it past its deadline only launches instances (an instance follows its deadline too).
    Only requests managed by their deciding tags (``SpotRequest.deciding_tags``) are ever cancelled."""
    by_instance = {r.instance_id: r for r in requests if r.instance_id}
    by_id = {r.id: r for r in requests}
    live_ids = {d.resource.id for d in instance_decisions}
    request_decisions: list[Decision] = []
    amended: list[Decision] = []
    cancelled: set[str] = set()
    for d in instance_decisions:
        inst = d.resource
        if d.action != TERMINATE or not isinstance(inst, Instance):
            amended.append(d)
            continue
        request = by_instance.get(inst.id) or by_id.get(inst.spot_request_id or "")
        request_id = inst.spot_request_id or (request.id if request else None)
        if request is not None and not is_managed(request.deciding_tags):
            amended.append(Decision(inst, KEEP, f"{d.reason}; its spot request {request.id} is not managed, so it is "
                                    "not cancelled and the instance is not terminated"))
            continue
        if request_id and request_id not in cancelled:
            cancelled.add(request_id)
            resource = request or SpotRequest(request_id, inst.region, "active", inst.id, None, inst.tags)
            request_decisions.append(Decision(resource, CANCEL, f"spot request of expiring instance {inst.id}"))
        amended.append(d)
    for request in requests:
        tags = request.deciding_tags
        if request.id in cancelled or not is_managed(tags):
            continue
        if request.state == "cancelled":
            # Cancelled already, its untagged instance still runs (collect.cancelled_leftovers): a leftover, ended
            # once the request's deadline plus the grace period has passed.
            expired, why = expiry_check(tags, settings)
            request_decisions.append(Decision(request, KEEP, f"cancelled, but its instance {request.instance_id} "
                                              f"(no gpulease tags, launched by it) still runs: a leftover; {why}"))
            holder = Instance(request.instance_id or "", request.region, request.instance_state or "", "", "spot",
                              None, request.id, dict(request.tags))
            amended.append(Decision(holder, TERMINATE if expired else KEEP,
                                    f"leftover of cancelled managed spot request {request.id}, judged by its tags: {why}"))
            continue
        holds = request.instance_id in live_ids or (request.instance_state is not None and not request.instance_gone)
        if holds and request.instance_id not in live_ids and request.managed_by_tags_of == "request" \
                and not is_managed(request.instance_tags):
            expired, why = expiry_check(tags, settings)
            if expired:
                cancelled.add(request.id)
                request_decisions.append(Decision(request, CANCEL, f"{why}; its instance {request.instance_id} has no "
                                                  "gpulease tags (launched by the request itself): cancelled, then "
                                                  "the instance terminated"))
                holder = Instance(request.instance_id or "", request.region, request.instance_state or "", "", "spot",
                                  None, request.id, dict(request.tags))
                amended.append(Decision(holder, TERMINATE, f"launched by managed spot request {request.id}, judged by "
                                        f"its tags: {why}"))
                continue
        if holds:
            request_decisions.append(Decision(request, KEEP, f"serves instance {request.instance_id}"))
            continue
        expired, why = expiry_check(tags, settings)
        if request.managed_by_tags_of == "instance":
            why += " (its instance's tags)"
        if request.orphaned:
            why = f"persistent, its instance {request.instance_id or '(none)'} is gone: it launches another; {why}"
        request_decisions.append(Decision(request, CANCEL if expired else KEEP, why))
    return request_decisions, amended


def plan_region(inventory: RegionInventory, settings: ReapSettings) -> list[Decision]:
    """What the sweep does to every managed resource of one region, and why."""
    decisions: list[Decision] = []
    instances = [i for i in inventory.instances if is_managed(i.tags)]
    instance_decisions = [decide_instance(i, settings) for i in instances]

    request_decisions, instance_decisions = decide_spot_requests(inventory.spot_requests, instance_decisions, settings)
    decisions.extend(request_decisions)
    decisions.extend(instance_decisions)
    decisions.extend(decide_address(a, settings) for a in inventory.addresses if is_managed(a.tags))
    terminating = {d.resource.id for d in instance_decisions if d.action == TERMINATE}
    decisions.extend(decide_volume(v, settings, terminating) for v in inventory.volumes if is_managed(v.tags))
    # Images before snapshots: a snapshot an image was made from cannot go while the image exists.
    decisions.extend(decide_image(i, settings) for i in inventory.images if is_managed(i.tags))
    decisions.extend(decide_snapshot(s, settings) for s in inventory.snapshots if is_managed(s.tags))
    return decisions
