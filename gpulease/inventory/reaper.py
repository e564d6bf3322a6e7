"""The AWS sweep: list (two-step lookup for instances and volumes), decide (``gpulease.inventory.decide``, shared
with every cloud) and act in EC2's batch sizes (``gpulease.inventory.acting``).

Tags alone only ever keep: a candidate is described afresh (state, attachments, all its tags) right before
acting, and every rule is applied again to that description.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from gpulease.core.vocabulary import TAG_RETAIN, TAG_RETAIN_UNTIL, is_managed, rfc3339, tags_from_list
from gpulease.inventory import acting
from gpulease.inventory.acting import (  # noqa: F401  (re-exported for callers of the AWS sweep)
    DONE,
    FAILED,
    GONE,
    KEPT,
    WOULD,
    ApiErrors,
    Outcome,
    SweepReport,
)
from gpulease.inventory.aws import AwsClients, check_account, not_found
from gpulease.inventory.collect import (
    Image,
    RegionInventory,
    Snapshot,
    Volume,
    fill,
    list_addresses,
    list_images,
    list_snapshots,
    list_spot_requests,
)
from gpulease.inventory.decide import (  # noqa: F401  (re-exported for callers of the AWS sweep)
    CANCEL,
    DEFAULT_GRACE,
    DEFAULT_SNAPSHOT_RETENTION,
    DELETE,
    KEEP,
    RELEASE,
    SNAPSHOT_AND_DELETE,
    TERMINATE,
    Decision,
    ReapSettings,
    kept_by_tags,
    plan_region,
)
from gpulease.inventory.lookup import describe_instances, describe_volumes, managed_tags

# EC2's limits on ids per call (TerminateInstances, CancelSpotInstanceRequests).
TERMINATE_BATCH = 1000
CANCEL_BATCH = 1000


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        return f"{err.get('Code', 'Error')}: {err.get('Message', '')}".strip()
    return f"{type(exc).__name__}: {exc}"


EC2_ERRORS = ApiErrors(
    types=(BotoCoreError, ClientError),
    not_found=not_found,
    text=_error_text,
    id_pattern=re.compile(r"\b(?:i|sir)-[0-9a-z]+\b"),
)


def snapshot_tags(volume: Volume, settings: ReapSettings) -> list[dict[str, str]]:
    """The volume's tags (keys under ``aws:`` are reserved) plus a retention end the next sweeps honour."""
    tags = {k: v for k, v in volume.tags.items() if not k.startswith("aws:")}
    tags[TAG_RETAIN] = "false"
    tags[TAG_RETAIN_UNTIL] = rfc3339(settings.now + settings.snapshot_retention)
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]


def execute_region(ec2: Any, decisions: list[Decision], settings: ReapSettings) -> list[Outcome]:
    """Act on one region's decisions (or, in a dry run, say what would be done)."""
    outcomes, by_action = acting.split(decisions, settings)
    if not by_action:
        return outcomes

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

    def deregister_image(d: Decision) -> str:
        image = d.resource
        assert isinstance(image, Image)
        ec2.deregister_image(ImageId=image.id)
        return "deregistered" + image_snapshots_deleted(ec2, image)

    size = max(1, min(settings.batch_size, TERMINATE_BATCH))
    # Cancel before terminating, and terminate nothing whose request is still open (acting.held_by_failed_cancel).
    cancels = by_action.get(CANCEL, [])
    cancelled = acting.batch(cancels, min(size, CANCEL_BATCH), cancel, "cancelled", EC2_ERRORS)
    terminations, held = acting.held_by_failed_cancel(by_action.get(TERMINATE, []), cancels, cancelled)
    outcomes += cancelled + held
    outcomes += acting.batch(terminations, size, terminate, "terminating", EC2_ERRORS)
    volumes = by_action.get(DELETE, []) + by_action.get(SNAPSHOT_AND_DELETE, [])
    volume_decisions = [d for d in volumes if isinstance(d.resource, Volume)]
    snapshot_decisions = [d for d in volumes if isinstance(d.resource, Snapshot)]
    image_decisions = [d for d in volumes if isinstance(d.resource, Image)]
    outcomes += acting.each(by_action.get(RELEASE, []), settings.workers, release, EC2_ERRORS)
    for result in acting.each(volume_decisions, settings.workers, delete_volume, EC2_ERRORS):
        if result.status != DONE and result.id in final_snapshots:
            result.detail += f" (final snapshot {final_snapshots[result.id]} was taken)"
        outcomes.append(result)
    # Images before snapshots: a snapshot a registered AMI was made from cannot be deleted.
    outcomes += acting.each(image_decisions, settings.workers, deregister_image, EC2_ERRORS)
    outcomes += acting.each(snapshot_decisions, settings.workers, delete_snapshot, EC2_ERRORS)
    return outcomes


def image_snapshots_deleted(ec2: Any, image: Image) -> str:
    """Delete the snapshots a deregistered AMI was made into (deregistering leaves them, and they keep costing:
    https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/deregister-ami.html). Only a snapshot described afresh
    whose description says CreateImage made it for this AMI ("Created by CreateImage(i-...) for ami-...") or that
    carries the managed tag is deleted; any other is left and named."""
    if not image.snapshot_ids:
        return ""
    deleted, left = [], []
    try:
        found = ec2.describe_snapshots(SnapshotIds=list(image.snapshot_ids), OwnerIds=["self"]).get("Snapshots", [])
    except ClientError as exc:
        return f"; its snapshots were not described ({_error_text(exc)}): {', '.join(image.snapshot_ids)} left"
    for snap in found:
        ours = f"for {image.id}" in snap.get("Description", "") or is_managed(tags_from_list(snap.get("Tags")))
        if not ours:
            left.append(snap["SnapshotId"])
            continue
        try:
            ec2.delete_snapshot(SnapshotId=snap["SnapshotId"])
            deleted.append(snap["SnapshotId"])
        except ClientError as exc:
            left.append(f"{snap['SnapshotId']} ({_error_text(exc)})")
    return (f"; snapshots deleted: {', '.join(deleted) or 'none'}"
            + (f"; left: {', '.join(left)}" if left else ""))


# --- the sweep -----------------------------------------------------------------------------------------------


def scan_region(ec2: Any, region: str, settings: ReapSettings) -> tuple[RegionInventory, list[Decision]]:
    """What a sweep needs of one region: spot requests (by state, judged by their own tags else their instance's),
    addresses, snapshots and images (server-side managed-by filter) listed in full; instances and volumes by their deciding tags (DescribeTags), the candidates among them
    then described by id. Returns the inventory to plan on and the keep decisions taken from tags alone.

    A lookup that fails is recorded in the inventory's errors and the other kinds are still swept: acting on a
    partial view is safe, since only what was described is acted on."""
    inventory = RegionInventory(region=region)
    listers = {"spot_requests": list_spot_requests, "addresses": list_addresses, "snapshots": list_snapshots,
               "images": list_images}
    if not fill(inventory, ec2, listers):
        return inventory, []
    try:
        tagged = managed_tags(ec2)
    except (BotoCoreError, ClientError) as exc:
        inventory.errors.append(f"{region}: reading instance and volume tags failed: {exc}")
        return inventory, []

    kept: list[Decision] = []
    candidates: dict[str, list[str]] = {"instance": [], "volume": []}
    for kind, ids in candidates.items():
        for rid, tags in tagged.of(kind).items():
            decision = kept_by_tags(kind, rid, region, tags, settings)
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
    report = SweepReport(account=account, regions=regions, executed=settings.execute, started_at=settings.now, cloud="aws")
    with ThreadPoolExecutor(max_workers=max(1, len(regions))) as pool:
        for outcomes, errors in pool.map(lambda r: sweep_region(clients, r, settings), regions):
            report.outcomes.extend(outcomes)
            report.errors.extend(errors)
    return report

