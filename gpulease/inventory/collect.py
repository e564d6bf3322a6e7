"""Listing: every gpulease-managed instance, spot request, volume, Elastic IP, snapshot, image and bucket in a
region.

Every call filters on ``gpulease:managed-by=gpulease`` server-side and pages with the largest page the API
allows; the result is checked again client-side so that nothing untagged can slip into a sweep. The spot requests
are the exception: a request may carry no tags of its own, so they are listed by state only and judged
client-side by their own tags, else their instance's (``list_spot_requests``).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from gpulease.core.vocabulary import MANAGED_BY_VALUE, TAG_MANAGED_BY, is_managed, parse_rfc3339, tags_from_list
from gpulease.inventory.aws import CREDENTIAL_ERRORS, UNREACHABLE_ERRORS, AwsClients, managed_filter
from gpulease.inventory.resources import (  # noqa: F401  (re-exported: the records every listing returns)
    Address,
    Bucket,
    Image,
    Instance,
    RegionInventory,
    Resource,
    Snapshot,
    SpotRequest,
    Volume,
)

# The largest page each API serves (its MaxResults ceiling); fewer pages means fewer calls.
PAGE_SIZE = {
    "describe_instances": 1000,
    "describe_spot_instance_requests": 1000,
    "describe_volumes": 500,
    "describe_snapshots": 1000,
    "describe_images": 1000,
    "get_resources": 100,
}

# Instances that still cost money or can be started again; shutting-down and terminated ones are left out.
LIVE_INSTANCE_STATES = ["pending", "running", "stopping", "stopped"]
# Spot requests that can still launch an instance: ``disabled`` is a persistent request whose instance was
# stopped by hand; it becomes active again when the instance is started.
LIVE_SPOT_REQUEST_STATES = ["open", "active", "disabled"]
FILTER_VALUES_PER_CALL = 200  # EC2's cap on the values of one filter

def pages(client: Any, operation: str, key: str, **params: Any) -> list[dict]:
    paginator = client.get_paginator(operation)
    config = {"PageSize": PAGE_SIZE[operation]} if operation in PAGE_SIZE else {}
    items: list[dict] = []
    for page in paginator.paginate(PaginationConfig=config, **params):
        items.extend(page.get(key, []))
    return items


def list_instances(ec2: Any, region: str) -> list[Instance]:
    filters = [*managed_filter(), {"Name": "instance-state-name", "Values": LIVE_INSTANCE_STATES}]
    return instances_from(pages(ec2, "describe_instances", "Reservations", Filters=filters), region)


def instances_from(reservations: list[dict], region: str) -> list[Instance]:
    """The managed instances of a DescribeInstances answer (the managed-by tag checked on the answer itself)."""
    found = []
    for reservation in reservations:
        for raw in reservation.get("Instances", []):
            tags = tags_from_list(raw.get("Tags"))
            if not is_managed(tags):
                continue
            found.append(
                Instance(
                    id=raw["InstanceId"],
                    region=region,
                    state=raw.get("State", {}).get("Name", "unknown"),
                    instance_type=raw.get("InstanceType", ""),
                    market=raw.get("InstanceLifecycle") or "on-demand",
                    launch_time=raw.get("LaunchTime"),
                    spot_request_id=raw.get("SpotInstanceRequestId"),
                    tags=tags,
                )
            )
    return found


def list_spot_requests(ec2: Any, region: str) -> list[SpotRequest]:
    """Live spot requests (open, active, disabled) that gpulease manages, and every live persistent one (managed or
    not: one whose instance is gone launches another). No tag filter on the server: a request is judged by its own
    tags when they carry ``gpulease:managed-by``, else by its instance's (``SpotRequest.deciding_tags``), so its
    instance is described too (by id, any state, so a terminated one shows as gone)."""
    # One listing for both: the live requests, and the cancelled ones whose instance may still run (below).
    filters = [{"Name": "state", "Values": [*LIVE_SPOT_REQUEST_STATES, "cancelled"]}]
    listed = [raw for raw in pages(ec2, "describe_spot_instance_requests", "SpotInstanceRequests", Filters=filters)
              if raw.get("SpotInstanceRequestId")]
    raws = [raw for raw in listed if raw.get("State") in LIVE_SPOT_REQUEST_STATES]
    cancelled = [raw for raw in listed if raw.get("State") == "cancelled" and raw.get("InstanceId")
                 and is_managed(tags_from_list(raw.get("Tags")))]
    held = instances_by_id(ec2, sorted({raw["InstanceId"] for raw in raws + cancelled if raw.get("InstanceId")}))
    found = []
    for raw in raws:
        instance_id = raw.get("InstanceId") or None
        state, instance_tags = held.get(instance_id, ("gone", {})) if instance_id else (None, {})
        request = SpotRequest(
            id=raw["SpotInstanceRequestId"],
            region=region,
            state=raw["State"],
            instance_id=instance_id,
            create_time=raw.get("CreateTime"),
            tags=tags_from_list(raw.get("Tags")),
            request_type=raw.get("Type", ""),
            status_code=(raw.get("Status") or {}).get("Code"),
            interruption=raw.get("InstanceInterruptionBehavior"),
            instance_state=state,
            instance_tags=instance_tags,
        )
        if is_managed(request.deciding_tags) or request.request_type == "persistent":
            found.append(request)
    found += cancelled_leftovers(cancelled, held, region)
    # The dangerous ones first: a persistent request whose instance is gone.
    return sorted(found, key=lambda r: not r.orphaned)


def cancelled_leftovers(raws: list[dict[str, Any]], held: dict[str, Any], region: str) -> list[SpotRequest]:
    """Cancelled requests managed by their own tags whose instance still runs without gpulease tags: what a
    re-opened persistent request launched before it was cancelled ("Canceling a Spot Instance request does not
    terminate the instance", CancelSpotInstanceRequests). No listing of instances finds it (it has no tags), so it is
    found through its request. ``raws``: the managed cancelled requests holding an instance, ``held``: their
    instances' states and tags (``list_spot_requests`` lists and describes both in its own calls)."""
    found = []
    for raw in raws:
        state, instance_tags = held.get(raw["InstanceId"], ("gone", {}))
        tags = tags_from_list(raw.get("Tags"))
        if state not in LIVE_INSTANCE_STATES or is_managed(instance_tags) or not is_managed(tags):
            continue
        found.append(SpotRequest(id=raw["SpotInstanceRequestId"], region=region, state="cancelled",
                                 instance_id=raw["InstanceId"], create_time=raw.get("CreateTime"), tags=tags,
                                 request_type=raw.get("Type", ""), status_code=(raw.get("Status") or {}).get("Code"),
                                 interruption=raw.get("InstanceInterruptionBehavior"), instance_state=state,
                                 instance_tags=instance_tags))
    return found


def instances_by_id(ec2: Any, ids: list[str]) -> dict[str, tuple[str, dict[str, str]]]:
    """Instance id -> (state, tags) for the ids EC2 still knows, whatever their state or tags. Asked through the
    ``instance-id`` filter, which leaves unknown ids out where ``InstanceIds`` fails the whole call."""
    found: dict[str, tuple[str, dict[str, str]]] = {}
    for start in range(0, len(ids), FILTER_VALUES_PER_CALL):
        chunk = ids[start : start + FILTER_VALUES_PER_CALL]
        for reservation in pages(ec2, "describe_instances", "Reservations",
                                 Filters=[{"Name": "instance-id", "Values": chunk}]):
            for raw in reservation.get("Instances", []):
                found[raw["InstanceId"]] = (raw.get("State", {}).get("Name", "unknown"), tags_from_list(raw.get("Tags")))
    return found


def list_volumes(ec2: Any, region: str) -> list[Volume]:
    return volumes_from(pages(ec2, "describe_volumes", "Volumes", Filters=managed_filter()), region)


def volumes_from(volumes: list[dict], region: str, *, managed_only: bool = True) -> list[Volume]:
    """The managed volumes of a DescribeVolumes answer (the managed-by tag checked on the answer itself); every one
    with ``managed_only=False``."""
    found = []
    for raw in volumes:
        tags = tags_from_list(raw.get("Tags"))
        if managed_only and not is_managed(tags):
            continue
        attached = tuple(a["InstanceId"] for a in raw.get("Attachments", []) if a.get("InstanceId"))
        found.append(
            Volume(
                id=raw["VolumeId"],
                region=region,
                state=raw.get("State", "unknown"),
                size_gb=int(raw.get("Size", 0)),
                volume_type=raw.get("VolumeType", ""),
                attached_to=attached,
                create_time=raw.get("CreateTime"),
                tags=tags,
                iops=raw.get("Iops"),
                throughput=raw.get("Throughput"),
            )
        )
    return found


def list_addresses(ec2: Any, region: str) -> list[Address]:
    # DescribeAddresses has no paging: one call answers for the whole region.
    found = []
    for raw in ec2.describe_addresses(Filters=managed_filter()).get("Addresses", []):
        tags = tags_from_list(raw.get("Tags"))
        if not is_managed(tags) or not raw.get("AllocationId"):
            continue
        found.append(
            Address(
                id=raw["AllocationId"],
                region=region,
                public_ip=raw.get("PublicIp", ""),
                association_id=raw.get("AssociationId") or None,
                instance_id=raw.get("InstanceId") or None,
                tags=tags,
            )
        )
    return found


def list_snapshots(ec2: Any, region: str) -> list[Snapshot]:
    found = []
    for raw in pages(ec2, "describe_snapshots", "Snapshots", OwnerIds=["self"], Filters=managed_filter()):
        tags = tags_from_list(raw.get("Tags"))
        if not is_managed(tags):
            continue
        found.append(
            Snapshot(
                id=raw["SnapshotId"],
                region=region,
                state=raw.get("State", "unknown"),
                volume_id=raw.get("VolumeId") or None,
                size_gb=int(raw.get("VolumeSize", 0)),
                start_time=raw.get("StartTime"),
                tags=tags,
            )
        )
    return found


def list_images(ec2: Any, region: str) -> list[Image]:
    """Managed AMIs of this account (a baked personal image), with the snapshots their block devices were made
    into: DescribeImages answers ``BlockDeviceMappings[].Ebs.SnapshotId`` and ``VolumeSize``
    (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeImages.html)."""
    found = []
    for raw in pages(ec2, "describe_images", "Images", Owners=["self"], Filters=managed_filter()):
        tags = tags_from_list(raw.get("Tags"))
        if not is_managed(tags):
            continue
        ebs = [m["Ebs"] for m in raw.get("BlockDeviceMappings", []) if m.get("Ebs")]
        try:
            created = parse_rfc3339(raw["CreationDate"]) if raw.get("CreationDate") else None
        except ValueError:
            created = None  # kept: _decide_copy keeps an image with neither a start time nor retain-until
        found.append(
            Image(
                id=raw["ImageId"],
                region=region,
                state=raw.get("State", "unknown"),
                name=raw.get("Name", ""),
                create_time=created,
                tags=tags,
                snapshot_ids=tuple(e["SnapshotId"] for e in ebs if e.get("SnapshotId")),
                size_gb=sum(int(e.get("VolumeSize", 0)) for e in ebs),
            )
        )
    return found


def list_buckets(tagging: Any, region: str) -> list[Bucket]:
    """Managed buckets through the tagging API: S3 itself cannot filter buckets by tag."""
    found = []
    for raw in pages(
        tagging,
        "get_resources",
        "ResourceTagMappingList",
        TagFilters=[{"Key": TAG_MANAGED_BY, "Values": [MANAGED_BY_VALUE]}],
        ResourceTypeFilters=["s3"],
    ):
        tags = tags_from_list(raw.get("Tags"))
        arn = raw.get("ResourceARN", "")
        if not is_managed(tags) or not arn.startswith("arn:") or ":s3:::" not in arn:
            continue
        found.append(Bucket(id=arn.split(":::", 1)[1], region=region, arn=arn, tags=tags))
    return found


Lister = Callable[[Any, str], list]

EC2_LISTERS: dict[str, Lister] = {
    "instances": list_instances,
    "spot_requests": list_spot_requests,
    "volumes": list_volumes,
    "addresses": list_addresses,
    "snapshots": list_snapshots,
    "images": list_images,
}


def fill(inventory: RegionInventory, client: Any, listers: dict[str, Lister]) -> bool:
    """Run each listing into the inventory field of its name, one after the other. A listing that fails is
    recorded in the inventory's errors and the others go on; an endpoint that cannot be reached (refused, or
    timed out on every attempt) stops the region, since its other calls would only wait the same way. Credential
    errors are raised: they are the user's to fix. Returns False when the region was given up."""
    for name, lister in listers.items():
        try:
            setattr(inventory, name, lister(client, inventory.region))
        except CREDENTIAL_ERRORS:
            raise
        except (BotoCoreError, ClientError) as exc:
            inventory.errors.append(f"{inventory.region}: listing {name.replace('_', ' ')} failed: {exc}")
            if isinstance(exc, UNREACHABLE_ERRORS):
                inventory.errors.append(f"{inventory.region}: endpoint unreachable; the region's other calls were skipped")
                return False
    return True


def list_attached_volumes(ec2: Any, region: str, instance_ids: list[str]) -> list[Volume]:
    """Every volume attached to these instances, tagged or not (DescribeVolumes ``attachment.instance-id``)."""
    found: list[Volume] = []
    for start in range(0, len(instance_ids), FILTER_VALUES_PER_CALL):
        chunk = instance_ids[start : start + FILTER_VALUES_PER_CALL]
        found += volumes_from(pages(ec2, "describe_volumes", "Volumes",
                                    Filters=[{"Name": "attachment.instance-id", "Values": chunk}]), region,
                              managed_only=False)
    return found


def collect_region(clients: AwsClients, region: str, *, buckets: bool = True, snapshots: bool = True) -> RegionInventory:
    """List one region, one listing after the other: EC2 throttles describe calls per account, and a listing is
    a handful of calls. A listing that fails is recorded and the others go on."""
    inventory = RegionInventory(region=region)
    ec2 = clients.ec2(region)
    reached = fill(inventory, ec2, {k: f for k, f in EC2_LISTERS.items() if snapshots or k != "snapshots"})
    stopped = sorted(i.id for i in inventory.instances if i.state == "stopped")
    if reached and stopped:
        fill(inventory, ec2, {"attached_volumes": lambda client, where: list_attached_volumes(client, where, stopped)})
    if buckets and reached:
        fill(inventory, clients.tagging(region), {"buckets": list_buckets})
    return inventory


def collect(clients: AwsClients, regions: list[str], **kwargs: Any) -> list[RegionInventory]:
    with ThreadPoolExecutor(max_workers=max(1, len(regions))) as pool:
        return list(pool.map(lambda region: collect_region(clients, region, **kwargs), regions))
