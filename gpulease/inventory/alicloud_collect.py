"""Alibaba Cloud listing: every gpulease-managed ECS instance, disk, snapshot, custom image, EIP and OSS bucket.

Every listing asks the server only for ``gpulease:managed-by=gpulease`` (``Tag.1.Key``/``Tag.1.Value``; ECS and
VPC return only resources carrying every tag pair given), pages with the largest page the API serves, and checks
the tag again on every answer. Records and states are the shared ones (``gpulease.inventory.resources``).

API references (request parameters, page ceilings, status values; also in the SDK models' docstrings):
- DescribeInstances: https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeinstances
  (MaxResults <= 100, NextToken);
- DescribeDisks: https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describedisks
  (MaxResults 10-500, NextToken);
- DescribeSnapshots: https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describesnapshots
  (MaxResults <= 100, NextToken);
- DescribeImages: https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeimages
  (PageSize <= 100, PageNumber; ImageOwnerAlias=self for custom images);
- DescribeEipAddresses: https://www.alibabacloud.com/help/en/vpc/developer-reference/api-vpc-2016-04-28-describeeipaddresses
  (PageSize <= 100, PageNumber);
- OSS ListBuckets (tag-key/tag-value filter, marker paging) and GetBucketTags:
  https://www.alibabacloud.com/help/en/oss/developer-reference/listbuckets
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from alibabacloud_ecs20140526 import models as ecs_models
from alibabacloud_vpc20160428 import models as vpc_models

from gpulease.core.vocabulary import MANAGED_BY_VALUE, TAG_MANAGED_BY, is_managed, parse_rfc3339, tags_from_list
from gpulease.inventory.alicloud_clients import AlicloudClients
from gpulease.inventory.alicloud_errors import CREDENTIAL_ERRORS, SDK_ERRORS, error_text, unreachable
from gpulease.inventory.resources import Address, Bucket, Image, Instance, RegionInventory, Snapshot, Volume

PAGE_SIZE = {"instances": 100, "disks": 500, "snapshots": 100, "images": 100, "eips": 100, "buckets": 1000}

INSTANCE_STATES = {"Pending": "pending", "Starting": "starting", "Running": "running", "Stopping": "stopping",
                   "Stopped": "stopped"}
DISK_STATES = {"Available": "available", "In_use": "in-use", "Creating": "creating", "Attaching": "attaching",
               "Detaching": "detaching", "ReIniting": "reiniting"}
SNAPSHOT_STATES = {"accomplished": "completed", "progressing": "pending", "failed": "error"}
IMAGE_STATES = {"Available": "available", "Creating": "creating", "Waiting": "waiting",
                "UnAvailable": "unavailable", "CreateFailed": "failed", "Deprecated": "deprecated"}
EIP_STATES = {"Available": "available", "InUse": "in-use", "Associating": "associating",
              "Unassociating": "unassociating", "Releasing": "releasing"}


def _state(table: dict[str, str], raw: str | None) -> str:
    return table.get(raw or "", (raw or "unknown").lower())


def parse_time(raw: str | None) -> datetime | None:
    """ECS times: ``2026-11-30T10:00Z`` or ``2026-11-30T10:00:00Z`` (UTC); empty when unset."""
    if not raw:
        return None
    try:
        return parse_rfc3339(raw)
    except ValueError:
        return None


def ecs_tags(item: dict) -> dict[str, str]:
    return tags_from_list((item.get("Tags") or {}).get("Tag"), key="TagKey", value="TagValue")


def managed_tag(model: Any) -> list[Any]:
    return [model(key=TAG_MANAGED_BY, value=MANAGED_BY_VALUE)]


def token_pages(call: Callable[[Any], Any], request: Any, *path: str) -> list[dict]:
    """Every item of a MaxResults/NextToken listing (``path`` leads to the item list in the answer)."""
    items: list[dict] = []
    while True:
        body = call(request).body.to_map()
        found: Any = body
        for key in path:
            found = (found or {}).get(key)
        items.extend(found or [])
        token = body.get("NextToken")
        if not token:
            return items
        request.next_token = token


def numbered_pages(call: Callable[[Any], Any], request: Any, *path: str) -> list[dict]:
    """Every item of a PageNumber/PageSize listing; stops at TotalCount (or at a short page)."""
    items: list[dict] = []
    request.page_number = 1
    while True:
        body = call(request).body.to_map()
        found: Any = body
        for key in path:
            found = (found or {}).get(key)
        page = found or []
        items.extend(page)
        total = body.get("TotalCount")
        if not page or len(page) < request.page_size or (total is not None and len(items) >= int(total)):
            return items
        request.page_number += 1


def instances_from(raw: list[dict], region: str) -> list[Instance]:
    found = []
    for item in raw:
        tags = ecs_tags(item)
        if not is_managed(tags):
            continue
        found.append(
            Instance(
                id=item["InstanceId"],
                region=region,
                state=_state(INSTANCE_STATES, item.get("Status")),
                instance_type=item.get("InstanceType", ""),
                market="on-demand" if item.get("SpotStrategy", "NoSpot") == "NoSpot" else "spot",
                launch_time=parse_time(item.get("StartTime") or item.get("CreationTime")),
                spot_request_id=None,
                tags=tags,
                release_time=parse_time(item.get("AutoReleaseTime")),
            )
        )
    return found


def list_instances(clients: AlicloudClients, region: str) -> list[Instance]:
    request = ecs_models.DescribeInstancesRequest(
        region_id=region, tag=managed_tag(ecs_models.DescribeInstancesRequestTag), max_results=PAGE_SIZE["instances"]
    )
    return instances_from(token_pages(clients.ecs(region).describe_instances, request, "Instances", "Instance"), region)


def disks_from(raw: list[dict], region: str) -> list[Volume]:
    found = []
    for item in raw:
        tags = ecs_tags(item)
        if not is_managed(tags):
            continue
        holder = item.get("InstanceId") or ""
        found.append(
            Volume(
                id=item["DiskId"],
                region=region,
                state=_state(DISK_STATES, item.get("Status")),
                size_gb=int(item.get("Size") or 0),
                volume_type=item.get("Category", ""),
                attached_to=(holder,) if holder else (),
                create_time=parse_time(item.get("CreationTime")),
                tags=tags,
                kind="disk",
                delete_with_instance=item.get("DeleteWithInstance"),
            )
        )
    return found


def list_disks(clients: AlicloudClients, region: str) -> list[Volume]:
    request = ecs_models.DescribeDisksRequest(
        region_id=region, tag=managed_tag(ecs_models.DescribeDisksRequestTag), max_results=PAGE_SIZE["disks"]
    )
    return disks_from(token_pages(clients.ecs(region).describe_disks, request, "Disks", "Disk"), region)


def list_snapshots(clients: AlicloudClients, region: str) -> list[Snapshot]:
    request = ecs_models.DescribeSnapshotsRequest(
        region_id=region, tag=managed_tag(ecs_models.DescribeSnapshotsRequestTag), max_results=PAGE_SIZE["snapshots"]
    )
    found = []
    for item in token_pages(clients.ecs(region).describe_snapshots, request, "Snapshots", "Snapshot"):
        tags = ecs_tags(item)
        if not is_managed(tags):
            continue
        found.append(
            Snapshot(
                id=item["SnapshotId"],
                region=region,
                state=_state(SNAPSHOT_STATES, item.get("Status")),
                volume_id=item.get("SourceDiskId") or None,
                size_gb=int(item.get("SourceDiskSize") or 0),
                start_time=parse_time(item.get("CreationTime")),
                tags=tags,
            )
        )
    return found


def _image_mappings(item: dict) -> list[dict]:
    mappings = (item.get("DiskDeviceMappings") or {}).get("DiskDeviceMapping") or []
    return [m for m in mappings if isinstance(m, dict)]


def list_images(clients: AlicloudClients, region: str) -> list[Image]:
    request = ecs_models.DescribeImagesRequest(
        region_id=region,
        image_owner_alias="self",
        status="ALL",
        tag=managed_tag(ecs_models.DescribeImagesRequestTag),
        page_size=PAGE_SIZE["images"],
    )
    found = []
    for item in numbered_pages(clients.ecs(region).describe_images, request, "Images", "Image"):
        tags = ecs_tags(item)
        if not is_managed(tags):
            continue
        found.append(
            Image(
                id=item["ImageId"],
                region=region,
                state=_state(IMAGE_STATES, item.get("Status")),
                name=item.get("ImageName", ""),
                create_time=parse_time(item.get("CreationTime")),
                tags=tags,
                # DescribeImages: Size (GiB) and DiskDeviceMappings.DiskDeviceMapping[].SnapshotId
                snapshot_ids=tuple(m["SnapshotId"] for m in _image_mappings(item) if m.get("SnapshotId")),
                size_gb=int(item.get("Size") or 0),
            )
        )
    return found


def list_eips(clients: AlicloudClients, region: str) -> list[Address]:
    request = vpc_models.DescribeEipAddressesRequest(
        region_id=region, tag=managed_tag(vpc_models.DescribeEipAddressesRequestTag), page_size=PAGE_SIZE["eips"]
    )
    found = []
    for item in numbered_pages(clients.vpc(region).describe_eip_addresses, request, "EipAddresses", "EipAddress"):
        tags = tags_from_list((item.get("Tags") or {}).get("Tag"))
        if not is_managed(tags):
            continue
        holder = item.get("InstanceId") or None
        found.append(
            Address(
                id=item["AllocationId"],
                region=region,
                public_ip=item.get("IpAddress", ""),
                association_id=holder,
                instance_id=holder,
                tags=tags,
                kind="eip",
                state=_state(EIP_STATES, item.get("Status")),
            )
        )
    return found


def list_buckets(clients: AlicloudClients, region: str) -> list[Bucket]:
    """Managed buckets of ``region``: ListBuckets filtered server-side on the managed-by tag, then each one's
    tags (GetBucketTags) for owner, deadline and retain."""
    import alibabacloud_oss_v2 as oss

    client = clients.oss(region)
    names: list[str] = []
    marker = None
    while True:
        answer = client.list_buckets(
            oss.ListBucketsRequest(
                tag_key=TAG_MANAGED_BY, tag_value=MANAGED_BY_VALUE, max_keys=PAGE_SIZE["buckets"], marker=marker
            )
        )
        for bucket in answer.buckets or []:
            if (bucket.region or (bucket.location or "").removeprefix("oss-")) == region:
                names.append(bucket.name)
        if not answer.is_truncated:
            break
        marker = answer.next_marker
    found = []
    for name in names:
        tagging = client.get_bucket_tags(oss.GetBucketTagsRequest(bucket=name))
        tag_set = tagging.tagging.tag_set if tagging.tagging else None
        pairs = tag_set.tags if tag_set and tag_set.tags else []
        tags = {t.key: t.value or "" for t in pairs}
        if is_managed(tags):
            found.append(Bucket(id=name, region=region, arn=f"acs:oss:*:*:{name}", tags=tags))
    return found


Lister = Callable[[AlicloudClients, str], list]

LISTERS: dict[str, Lister] = {
    "instances": list_instances,
    "volumes": list_disks,
    "addresses": list_eips,
    "images": list_images,
    "snapshots": list_snapshots,
}


def fill(inventory: RegionInventory, clients: AlicloudClients, listers: dict[str, Lister]) -> bool:
    """Run each listing into the inventory field of its name. A listing that fails is recorded and the others go
    on; an endpoint that cannot be reached stops the region (the other calls would only wait the same way).
    Credential errors are raised: they are the user's to fix. Returns False when the region was given up."""
    for name, lister in listers.items():
        try:
            setattr(inventory, name, lister(clients, inventory.region))
        except CREDENTIAL_ERRORS:
            raise
        except SDK_ERRORS as exc:
            what = {"volumes": "disks", "addresses": "EIPs"}.get(name, name)
            inventory.errors.append(f"{inventory.region}: listing {what} failed: {error_text(exc)}")
            if unreachable(exc):
                inventory.errors.append(f"{inventory.region}: endpoint unreachable; the region's other listings were skipped")
                return False
    return True


def collect_region(clients: AlicloudClients, region: str, *, buckets: bool = True) -> RegionInventory:
    inventory = RegionInventory(region=region)
    reached = fill(inventory, clients, LISTERS)
    if buckets and reached:
        fill(inventory, clients, {"buckets": list_buckets})
    return inventory


def collect(clients: AlicloudClients, regions: list[str], **kwargs: Any) -> list[RegionInventory]:
    clients.check_credentials()
    with ThreadPoolExecutor(max_workers=max(1, len(regions))) as pool:
        return list(pool.map(lambda region: collect_region(clients, region, **kwargs), regions))
