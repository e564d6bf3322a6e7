"""The sweep: decide what happens to each managed resource, then act in batches and report every outcome.

Decisions are pure (inventory + clock in, decisions out) so the safety rules can be read and tested on their
own. Acting never raises for one resource or one batch: a failure is recorded and the sweep goes on.

Safety rules, in order:
- only resources tagged ``gpulease:managed-by=gpulease`` are looked at (server-side filters: tag filters on the
  listings, resource-type and key filters on DescribeTags), and the tag is checked again client-side;
- tags alone only ever keep: a candidate is described afresh (state, attachments, all its tags) right before
  acting, and every rule is applied again to that description;
- nothing without a valid ``gpulease:expires-at`` is touched, and nothing before that deadline plus a grace period;
- a volume is deleted only when unattached, available and explicitly tagged ``gpulease:retain=false``
  (a missing or unreadable retain tag counts as retained);
- ``gpulease:retain=true`` protects any resource; buckets are listed but never deleted;
- a snapshot is deleted only after its ``gpulease:retain-until`` (or its start time plus the retention period).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from components.vocabulary import (
    TAG_EXPIRES_AT,
    TAG_RETAIN,
    TAG_RETAIN_UNTIL,
    is_managed,
    parse_rfc3339,
    rfc3339,
)
from gpulease.inventory.aws import AwsClients, check_account, not_found
from gpulease.inventory.collect import (
    Address,
    Instance,
    RegionInventory,
    Resource,
    Snapshot,
    SpotRequest,
    Volume,
    fill,
    list_addresses,
    list_snapshots,
    list_spot_requests,
)
from gpulease.inventory.lookup import Tagged, describe_instances, describe_volumes, managed_tags

TERMINATE = "terminate"
CANCEL = "cancel-spot-request"
RELEASE = "release"
DELETE = "delete"
SNAPSHOT_AND_DELETE = "snapshot-and-delete"
KEEP = "keep"

# Outcome statuses.
KEPT = "kept"
WOULD = "would"
DONE = "done"
GONE = "gone"
FAILED = "failed"

# API limits on ids per call.
TERMINATE_BATCH = 1000
CANCEL_BATCH = 1000

DEFAULT_GRACE = timedelta(hours=1)
DEFAULT_SNAPSHOT_RETENTION = timedelta(days=30)


@dataclass(frozen=True)
class ReapSettings:
    now: datetime
    grace: timedelta = DEFAULT_GRACE
    snapshot_before_delete: bool = False
    snapshot_retention: timedelta = DEFAULT_SNAPSHOT_RETENTION
    execute: bool = False
    workers: int = 8
    batch_size: int = TERMINATE_BATCH


@dataclass(frozen=True)
class Decision:
    resource: Resource | Tagged
    action: str
    reason: str


@dataclass
class Outcome:
    kind: str
    id: str
    region: str
    action: str
    status: str
    reason: str
    detail: str = ""

    def as_dict(self) -> dict[str, str]:
        return {
            "region": self.region,
            "kind": self.kind,
            "id": self.id,
            "action": self.action,
            "status": self.status,
            "reason": self.reason,
            "detail": self.detail,
        }


@dataclass
class SweepReport:
    account: str
    regions: list[str]
    executed: bool
    started_at: datetime
    outcomes: list[Outcome] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.errors) or any(o.status == FAILED for o in self.outcomes)

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for outcome in self.outcomes:
            counts[outcome.status] = counts.get(outcome.status, 0) + 1
        return counts

    def as_dict(self) -> dict[str, Any]:
        return {
            "account": self.account,
            "regions": self.regions,
            "executed": self.executed,
            "startedAt": rfc3339(self.started_at),
            "counts": self.counts(),
            "errors": self.errors,
            "outcomes": [o.as_dict() for o in self.outcomes],
        }


# --- decisions -----------------------------------------------------------------------------------------------


def _ago(delta: timedelta) -> str:
    hours = delta.total_seconds() / 3600
    return f"{hours / 24:.1f}d" if abs(hours) >= 48 else f"{hours:.1f}h"


def _deadline(tags: dict[str, str]) -> tuple[datetime | None, str]:
    raw = tags.get(TAG_EXPIRES_AT)
    if not raw:
        return None, f"no {TAG_EXPIRES_AT} tag"
    try:
        return parse_rfc3339(raw), ""
    except ValueError:
        return None, f"{TAG_EXPIRES_AT}={raw!r} is not an RFC 3339 time"


def _retain(tags: dict[str, str]) -> bool | None:
    """True/False when the retain tag says so; None when it is missing or unreadable."""
    value = tags.get(TAG_RETAIN, "").strip().lower()
    return {"true": True, "false": False}.get(value)


def _expiry_check(tags: dict[str, str], settings: ReapSettings) -> tuple[bool, str]:
    """(past deadline + grace, why)."""
    deadline, problem = _deadline(tags)
    if deadline is None:
        return False, f"{problem}; never swept"
    if settings.now >= deadline + settings.grace:
        return True, f"expired at {rfc3339(deadline)} ({_ago(settings.now - deadline)} ago)"
    if settings.now >= deadline:
        return False, f"expired at {rfc3339(deadline)}; in the grace period until {rfc3339(deadline + settings.grace)}"
    return False, f"expires at {rfc3339(deadline)} (in {_ago(deadline - settings.now)})"


def _decide_instance(inst: Instance, settings: ReapSettings) -> Decision:
    expired, why = _expiry_check(inst.tags, settings)
    return Decision(inst, TERMINATE if expired else KEEP, why)


def _decide_address(addr: Address, settings: ReapSettings) -> Decision:
    if addr.association_id or addr.instance_id:
        return Decision(addr, KEEP, f"associated with {addr.instance_id or addr.association_id}")
    if _retain(addr.tags) is True:
        return Decision(addr, KEEP, f"{TAG_RETAIN}=true")
    expired, why = _expiry_check(addr.tags, settings)
    return Decision(addr, RELEASE if expired else KEEP, f"unassociated; {why}")


def _decide_volume(vol: Volume, settings: ReapSettings, terminating: set[str]) -> Decision:
    if vol.attached_to:
        ids = ", ".join(vol.attached_to)
        later = " (being terminated; a later sweep decides)" if terminating & set(vol.attached_to) else ""
        return Decision(vol, KEEP, f"attached to {ids}{later}")
    if vol.state != "available":
        return Decision(vol, KEEP, f"state is {vol.state}")
    retain = _retain(vol.tags)
    if retain is True:
        return Decision(vol, KEEP, f"{TAG_RETAIN}=true")
    if retain is None:
        return Decision(vol, KEEP, f"no readable {TAG_RETAIN} tag; treated as retained")
    expired, why = _expiry_check(vol.tags, settings)
    if not expired:
        return Decision(vol, KEEP, f"unattached; {why}")
    action = SNAPSHOT_AND_DELETE if settings.snapshot_before_delete else DELETE
    return Decision(vol, action, f"unattached, {TAG_RETAIN}=false, {why}")


def _decide_snapshot(snap: Snapshot, settings: ReapSettings) -> Decision:
    if _retain(snap.tags) is True:
        return Decision(snap, KEEP, f"{TAG_RETAIN}=true")
    if snap.state != "completed":
        return Decision(snap, KEEP, f"state is {snap.state}")
    deadline, _ = _deadline(snap.tags)
    if deadline is not None and settings.now < deadline:
        return Decision(snap, KEEP, f"its experiment runs until {rfc3339(deadline)}")
    raw = snap.tags.get(TAG_RETAIN_UNTIL)
    if raw:
        try:
            until = parse_rfc3339(raw)
        except ValueError:
            return Decision(snap, KEEP, f"{TAG_RETAIN_UNTIL}={raw!r} is not an RFC 3339 time")
        source = TAG_RETAIN_UNTIL
    elif snap.start_time is not None:
        until = snap.start_time + settings.snapshot_retention
        source = f"start + {settings.snapshot_retention.days}d retention"
    else:
        return Decision(snap, KEEP, "no start time and no retain-until tag")
    if settings.now >= until:
        return Decision(snap, DELETE, f"retention ended at {rfc3339(until)} ({source})")
    return Decision(snap, KEEP, f"retained until {rfc3339(until)} ({source})")


def plan_region(inventory: RegionInventory, settings: ReapSettings) -> list[Decision]:
    """What the sweep does to every managed resource of one region, and why. Pure: no API calls."""
    decisions: list[Decision] = []
    instances = [i for i in inventory.instances if is_managed(i.tags)]
    instance_decisions = [_decide_instance(i, settings) for i in instances]
    terminating = {d.resource.id for d in instance_decisions if d.action == TERMINATE}
    live_ids = {i.id for i in instances}

    requests = [r for r in inventory.spot_requests if is_managed(r.tags)]
    request_by_instance = {r.instance_id: r for r in requests if r.instance_id}
    cancelled: set[str] = set()
    # Cancel before terminating: a persistent request would otherwise launch a replacement.
    for d in instance_decisions:
        inst = d.resource
        if d.action != TERMINATE or not isinstance(inst, Instance):
            continue
        request = request_by_instance.get(inst.id)
        request_id = inst.spot_request_id or (request.id if request else None)
        if request_id and request_id not in cancelled:
            cancelled.add(request_id)
            resource = request or SpotRequest(request_id, inst.region, "active", inst.id, None, inst.tags)
            decisions.append(Decision(resource, CANCEL, f"spot request of expiring instance {inst.id}"))
    for request in requests:
        if request.id in cancelled:
            continue
        if request.instance_id in live_ids:
            decisions.append(Decision(request, KEEP, f"serves instance {request.instance_id}"))
            continue
        expired, why = _expiry_check(request.tags, settings)
        decisions.append(Decision(request, CANCEL if expired else KEEP, why))

    decisions.extend(instance_decisions)
    decisions.extend(_decide_address(a, settings) for a in inventory.addresses if is_managed(a.tags))
    decisions.extend(_decide_volume(v, settings, terminating) for v in inventory.volumes if is_managed(v.tags))
    decisions.extend(_decide_snapshot(s, settings) for s in inventory.snapshots if is_managed(s.tags))
    return decisions


# --- actions -------------------------------------------------------------------------------------------------


def _error_text(exc: Exception) -> str:
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        return f"{err.get('Code', 'Error')}: {err.get('Message', '')}".strip()
    return f"{type(exc).__name__}: {exc}"


def _chunks(items: list[Decision], size: int) -> Iterable[list[Decision]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _outcome(decision: Decision, status: str, detail: str = "") -> Outcome:
    r = decision.resource
    return Outcome(r.kind, r.id, r.region, decision.action, status, decision.reason, detail)


_ID_PATTERN = re.compile(r"\b(?:i|sir)-[0-9a-z]+\b")


def _batch(
    decisions: list[Decision], size: int, call: Callable[[list[str]], set[str]], done_word: str
) -> list[Outcome]:
    """One call per ``size`` ids. Ids the error names as missing are gone already and the rest is sent again
    (each pass drops at least one id, so this ends); any other error fails that batch only."""
    outcomes: list[Outcome] = []
    for chunk in _chunks(decisions, size):
        pending = {d.resource.id: d for d in chunk}
        while pending:
            try:
                accepted = call(list(pending))
            except (BotoCoreError, ClientError) as exc:
                missing = set(_ID_PATTERN.findall(str(exc))) & set(pending) if not_found(exc) else set()
                if missing:
                    outcomes.extend(_outcome(pending.pop(i), GONE, "no longer exists") for i in sorted(missing))
                    continue
                outcomes.extend(_outcome(d, FAILED, _error_text(exc)) for d in pending.values())
                break
            for rid, d in pending.items():
                if rid in accepted:
                    outcomes.append(_outcome(d, DONE, done_word))
                else:
                    outcomes.append(_outcome(d, FAILED, "not in the service's answer"))
            break
    return outcomes


def _each(decisions: list[Decision], workers: int, act: Callable[[Decision], str]) -> list[Outcome]:
    """One call (or two) per resource, several at a time; NotFound means someone else already removed it."""

    def run(decision: Decision) -> Outcome:
        try:
            return _outcome(decision, DONE, act(decision))
        except (BotoCoreError, ClientError) as exc:
            if not_found(exc):
                return _outcome(decision, GONE, "no longer exists")
            return _outcome(decision, FAILED, _error_text(exc))

    if not decisions:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(decisions)))) as pool:
        return list(pool.map(run, decisions))


def snapshot_tags(volume: Volume, settings: ReapSettings) -> list[dict[str, str]]:
    """The volume's tags (keys under ``aws:`` are reserved) plus a retention end the next sweeps honour."""
    tags = {k: v for k, v in volume.tags.items() if not k.startswith("aws:")}
    tags[TAG_RETAIN] = "false"
    tags[TAG_RETAIN_UNTIL] = rfc3339(settings.now + settings.snapshot_retention)
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]


def execute_region(ec2: Any, decisions: list[Decision], settings: ReapSettings) -> list[Outcome]:
    """Act on one region's decisions (or, in a dry run, say what would be done)."""
    keep = [d for d in decisions if d.action == KEEP]
    act = [d for d in decisions if d.action != KEEP]
    outcomes = [_outcome(d, KEPT) for d in keep]
    if not settings.execute:
        return outcomes + [_outcome(d, WOULD) for d in act]

    by_action: dict[str, list[Decision]] = {}
    for d in act:
        by_action.setdefault(d.action, []).append(d)

    def cancel(ids: list[str]) -> set[str]:
        answer = ec2.cancel_spot_instance_requests(SpotInstanceRequestIds=ids)
        return {r["SpotInstanceRequestId"] for r in answer.get("CancelledSpotInstanceRequests", [])}

    def terminate(ids: list[str]) -> set[str]:
        answer = ec2.terminate_instances(InstanceIds=ids)
        return {r["InstanceId"] for r in answer.get("TerminatingInstances", [])}

    def release(d: Decision) -> str:
        ec2.release_address(AllocationId=d.resource.id)
        return "released"

    final_snapshots: dict[str, str] = {}

    def delete_volume(d: Decision) -> str:
        detail = "deleted"
        if d.action == SNAPSHOT_AND_DELETE:
            vol = d.resource
            assert isinstance(vol, Volume)
            snap = ec2.create_snapshot(
                VolumeId=vol.id,
                Description=f"gpulease reaper: final snapshot of {vol.id}",
                TagSpecifications=[{"ResourceType": "snapshot", "Tags": snapshot_tags(vol, settings)}],
            )
            final_snapshots[vol.id] = snap["SnapshotId"]
            detail = f"snapshot {snap['SnapshotId']}, then deleted"
        ec2.delete_volume(VolumeId=d.resource.id)
        return detail

    def delete_snapshot(d: Decision) -> str:
        ec2.delete_snapshot(SnapshotId=d.resource.id)
        return "deleted"

    size = max(1, min(settings.batch_size, TERMINATE_BATCH))
    outcomes += _batch(by_action.get(CANCEL, []), min(size, CANCEL_BATCH), cancel, "cancelled")
    outcomes += _batch(by_action.get(TERMINATE, []), size, terminate, "terminating")
    volumes = by_action.get(DELETE, []) + by_action.get(SNAPSHOT_AND_DELETE, [])
    volume_decisions = [d for d in volumes if isinstance(d.resource, Volume)]
    snapshot_decisions = [d for d in volumes if isinstance(d.resource, Snapshot)]
    outcomes += _each(by_action.get(RELEASE, []), settings.workers, release)
    for outcome in _each(volume_decisions, settings.workers, delete_volume):
        if outcome.status != DONE and outcome.id in final_snapshots:
            outcome.detail += f" (final snapshot {final_snapshots[outcome.id]} was taken)"
        outcomes.append(outcome)
    outcomes += _each(snapshot_decisions, settings.workers, delete_snapshot)
    return outcomes


# --- the sweep -----------------------------------------------------------------------------------------------


def _kept_by_tags(kind: str, rid: str, region: str, tags: dict[str, str], settings: ReapSettings) -> Decision | None:
    """The keep decision that a resource's deciding tags alone support, or None when it is a candidate (which is
    then described before anything is decided: tags alone never lead to an action)."""
    resource = Tagged(kind, rid, region, tags)
    if kind == "volume":
        retain = _retain(tags)
        if retain is True:
            return Decision(resource, KEEP, f"{TAG_RETAIN}=true")
        if retain is None:
            return Decision(resource, KEEP, f"no readable {TAG_RETAIN} tag; treated as retained")
    expired, why = _expiry_check(tags, settings)
    return None if expired else Decision(resource, KEEP, why)


def scan_region(ec2: Any, region: str, settings: ReapSettings) -> tuple[RegionInventory, list[Decision]]:
    """What a sweep needs of one region: spot requests, addresses and snapshots listed in full (server-side
    managed-by filter); instances and volumes by their deciding tags (DescribeTags), the candidates among them
    then described by id. Returns the inventory to plan on and the keep decisions taken from tags alone.

    A lookup that fails is recorded in the inventory's errors and the other kinds are still swept: acting on a
    partial view is safe, since only what was described is acted on."""
    inventory = RegionInventory(region=region)
    fill(inventory, ec2, {"spot_requests": list_spot_requests, "addresses": list_addresses, "snapshots": list_snapshots})
    try:
        tagged = managed_tags(ec2)
    except (BotoCoreError, ClientError) as exc:
        inventory.errors.append(f"{region}: reading instance and volume tags failed: {exc}")
        return inventory, []

    kept: list[Decision] = []
    candidates: dict[str, list[str]] = {"instance": [], "volume": []}
    for kind, ids in candidates.items():
        for rid, tags in tagged.of(kind).items():
            decision = _kept_by_tags(kind, rid, region, tags, settings)
            if decision is None:
                ids.append(rid)
            else:
                kept.append(decision)
    # A live request's instance decides whether the request is kept, so it is described too.
    serving = {r.instance_id for r in inventory.spot_requests if r.instance_id in tagged.of("instance")}
    described = set(candidates["instance"]) | serving
    kept = [d for d in kept if d.resource.id not in described]
    try:
        inventory.instances = describe_instances(ec2, region, sorted(described)) if described else []
    except (BotoCoreError, ClientError) as exc:
        inventory.errors.append(f"{region}: describing candidate instances failed: {exc}")
    try:
        inventory.volumes = describe_volumes(ec2, region, candidates["volume"]) if candidates["volume"] else []
    except (BotoCoreError, ClientError) as exc:
        inventory.errors.append(f"{region}: describing candidate volumes failed: {exc}")
    return inventory, kept


def sweep_region(clients: AwsClients, region: str, settings: ReapSettings) -> tuple[list[Outcome], list[str]]:
    ec2 = clients.ec2(region)
    inventory, kept = scan_region(ec2, region, settings)
    decisions = plan_region(inventory, settings) + kept
    return execute_region(ec2, decisions, settings), inventory.errors


def sweep(
    clients: AwsClients, regions: list[str], settings: ReapSettings, allowed_accounts: list[str] | None = None
) -> SweepReport:
    """Check the account against the allowlist, then list, decide and act in every region (side by side)."""
    account = clients.account_id(regions[0])
    check_account(account, allowed_accounts or [])
    report = SweepReport(account=account, regions=regions, executed=settings.execute, started_at=settings.now)
    with ThreadPoolExecutor(max_workers=max(1, len(regions))) as pool:
        for outcomes, errors in pool.map(lambda r: sweep_region(clients, r, settings), regions):
            report.outcomes.extend(outcomes)
            report.errors.extend(errors)
    return report

