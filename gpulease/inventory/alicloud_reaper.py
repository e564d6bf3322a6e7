"""The Alibaba Cloud sweep: list (``alicloud_collect``), decide (``gpulease.inventory.decide``, shared with AWS) and
act in the API's batch sizes (``gpulease.inventory.acting``).

Instances released by a spot reclaim or by their ``AutoReleaseTime`` vanish by themselves; what the sweep finds is
what they leave behind (data disks with ``DeleteWithInstance=false``, EIPs, snapshots, custom images) and
instances whose release time was never set or did not release them. Every decision is taken on the full
description the filtered listing returned in this same sweep (state, attachment, all tags), right before acting.

Actions and their API references:
- DeleteInstances (``InstanceId.N``, 1-100 ids a call, ``Force=true`` to release a running instance):
  https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-deleteinstances
- ReleaseEipAddress (only an ``Available`` EIP; ``InvalidAllocationId.NotFound``, ``IncorrectEipStatus``):
  https://www.alibabacloud.com/help/en/vpc/developer-reference/api-vpc-2016-04-28-releaseeipaddress
- DeleteDisk (only an ``Available`` disk, ``IncorrectDiskStatus`` otherwise; an unknown id is ignored):
  https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-deletedisk
- DeleteImage (an unknown id is ignored; without ``Force`` an image in use is refused):
  https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-deleteimage
- DeleteSnapshot (without ``Force`` a snapshot a disk or an image was made from is refused):
  https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-deletesnapshot
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from alibabacloud_ecs20140526 import models as ecs_models
from alibabacloud_vpc20160428 import models as vpc_models

from gpulease.core.errors import UserError
from gpulease.inventory import acting
from gpulease.inventory.acting import Outcome, SweepReport
from gpulease.inventory.alicloud_clients import AlicloudClients
from gpulease.inventory.alicloud_collect import collect_region
from gpulease.inventory.alicloud_errors import ALICLOUD_ERRORS
from gpulease.inventory.aws import check_account
from gpulease.inventory.decide import CANCEL, DELETE, RELEASE, TERMINATE, Decision, ReapSettings, plan_region
from gpulease.inventory.resources import Image, Snapshot, Volume

DELETE_INSTANCES_BATCH = 100


class AlicloudOptionError(UserError):
    """An option the Alibaba Cloud sweep cannot honour."""


def check_settings(settings: ReapSettings) -> None:
    if settings.snapshot_before_delete:
        # DeleteDisk answers DiskCreatingSnapshot (403) while a snapshot of the disk is being created, so a final
        # snapshot and the delete cannot happen in one pass; take snapshots with the stack's own tooling instead.
        raise AlicloudOptionError(
            "--snapshot-before-delete is not supported with --cloud alicloud: Alibaba Cloud refuses to delete a disk "
            "while its snapshot is being created (DiskCreatingSnapshot)"
        )


def execute_region(clients: AlicloudClients, region: str, decisions: list[Decision], settings: ReapSettings) -> list[Outcome]:
    """Act on one region's decisions (or, in a dry run, say what would be done)."""
    outcomes, by_action = acting.split(decisions, settings)
    if not by_action:
        return outcomes
    ecs = clients.ecs(region)
    vpc = clients.vpc(region)

    def release_instances(ids: list[str]) -> set[str]:
        ecs.delete_instances(ecs_models.DeleteInstancesRequest(region_id=region, instance_id=ids, force=True))
        return set(ids)  # the call succeeds for all of them or fails as a whole

    def release_eip(d: Decision) -> str:
        vpc.release_eip_address(vpc_models.ReleaseEipAddressRequest(region_id=region, allocation_id=d.resource.id))
        return "released"

    def delete(d: Decision) -> str:
        r = d.resource
        if isinstance(r, Volume):
            ecs.delete_disk(ecs_models.DeleteDiskRequest(disk_id=r.id))
        elif isinstance(r, Image):
            ecs.delete_image(ecs_models.DeleteImageRequest(region_id=region, image_id=r.id, force=False))
        elif isinstance(r, Snapshot):
            ecs.delete_snapshot(ecs_models.DeleteSnapshotRequest(snapshot_id=r.id, force=False))
        return "deleted"

    size = max(1, min(settings.batch_size, DELETE_INSTANCES_BATCH))
    # The hook for a cloud-side object that can start an instance again (what AWS's persistent spot request is):
    # the Alibaba Cloud listing fills no ``spot_requests`` today, so the shared decisions make no CANCEL here. A
    # listing that maps such an object onto ``SpotRequest`` records gets the AWS rules (``decide_spot_requests``),
    # and its cancel call goes here, before the releases, with ``acting.held_by_failed_cancel``. Until then a
    # CANCEL fails (and holds its instance) instead of being skipped in silence.
    cancels = by_action.get(CANCEL, [])
    not_cancelled = [acting.outcome(d, acting.FAILED, "no cancel action on Alibaba Cloud") for d in cancels]
    releases, held = acting.held_by_failed_cancel(by_action.get(TERMINATE, []), cancels, not_cancelled)
    outcomes += not_cancelled + held
    outcomes += acting.batch(releases, size, release_instances, "released", ALICLOUD_ERRORS)
    outcomes += acting.each(by_action.get(RELEASE, []), settings.workers, release_eip, ALICLOUD_ERRORS)
    deletes = by_action.get(DELETE, [])
    # Disks, then images, then snapshots: a snapshot an image was made from can go only after the image.
    for kind in (Volume, Image, Snapshot):
        outcomes += acting.each([d for d in deletes if isinstance(d.resource, kind)], settings.workers, delete,
                                ALICLOUD_ERRORS)
    return outcomes


def sweep_region(clients: AlicloudClients, region: str, settings: ReapSettings) -> tuple[list[Outcome], list[str]]:
    inventory = collect_region(clients, region, buckets=False)
    return execute_region(clients, region, plan_region(inventory, settings), settings), inventory.errors


def sweep(
    clients: AlicloudClients, regions: list[str], settings: ReapSettings, allowed_accounts: list[str] | None = None
) -> SweepReport:
    """Check the credentials and the account (STS GetCallerIdentity) against the allowlist, then list, decide and
    act in every region (side by side)."""
    check_settings(settings)
    clients.check_credentials()
    account = clients.account_id(regions[0])
    check_account(account, allowed_accounts or [])
    report = SweepReport(
        account=account, regions=regions, executed=settings.execute, started_at=settings.now, cloud="alicloud"
    )
    with ThreadPoolExecutor(max_workers=max(1, len(regions))) as pool:
        for outcomes, errors in pool.map(lambda r: sweep_region(clients, r, settings), regions):
            report.outcomes.extend(outcomes)
            report.errors.extend(errors)
    return report
