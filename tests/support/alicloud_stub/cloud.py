"""The stub's account: ECS instances, disks, snapshots and custom images, VPC EIPs, OSS buckets, and the actions
the inventory and the reaper call, answered as the API references describe them.

Behaviour per action (API reference, and what the stub does):
- DescribeInstances / DescribeDisks / DescribeSnapshots (``MaxResults``/``NextToken``; ``MaxResults`` below 10
  counts as 10 and above the ceiling as the ceiling: 100, 500, 100): ``Tag.N.Key``/``Tag.N.Value`` keep the
  resources carrying every pair; ``InstanceIds``/``DiskIds`` (JSON arrays) restrict to those ids, leaving unknown
  ids out. https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeinstances
- DescribeImages (``PageNumber``/``PageSize`` <= 100, ``ImageOwnerAlias=self``, ``Status`` default Available).
- DescribeEipAddresses (VPC, ``PageNumber``/``PageSize`` <= 100, ``Tag.N``).
- DeleteInstances: 1-100 ``InstanceId.N``; an unknown id fails the call with ``InvalidInstanceId.NotFound`` (404,
  the message names no id); a ``Running`` instance without ``Force=true`` fails with ``IncorrectInstanceStatus``
  (403). A released instance's disks go with it when ``DeleteWithInstance`` is true and are detached
  (``Available``) otherwise; its EIPs are left unassociated (``Available``).
  https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-deleteinstances
- StartInstance: only a ``Stopped`` instance starts (``IncorrectInstanceStatus``, 403); an unknown id
  ``InvalidInstanceId.NotFound`` (404). https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-startinstance
- DeleteDisk: only an ``Available`` disk (``IncorrectDiskStatus``, 403); an unknown id is ignored (200).
  https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-deletedisk
- DeleteSnapshot: unknown id ``InvalidSnapshotId.NotFound`` (404); a snapshot an existing image was made from,
  without ``Force``, ``SnapshotCreatedImage`` (403).
  https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-deletesnapshot
- DeleteImage: an unknown id is ignored (the SDK's docstring: "If the specified custom image does not exist, the
  request is ignored"). https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-deleteimage
- ReleaseEipAddress: unknown id ``InvalidAllocationId.NotFound`` (404); not ``Available`` ``IncorrectEipStatus``
  (400). https://www.alibabacloud.com/help/en/vpc/developer-reference/api-vpc-2016-04-28-releaseeipaddress
- STS GetCallerIdentity: the account id.
- OSS ListBuckets (``tag-key``/``tag-value``, ``marker``/``max-keys``) and GetBucketTags.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from xml.sax.saxutils import escape

from tests.support.alicloud_stub.server import ECS_VERSION, STS_VERSION, VPC_VERSION, AlicloudStub, ApiError, RpcRequest


def _time(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ") if moment else ""


@dataclass
class Resource:
    id: str
    region: str
    tags: dict[str, str]
    status: str
    created: datetime
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Account:
    """Everything in the stub's account, by kind then id; mutated by the delete actions."""

    account_id: str = "1234567890123456"
    instances: dict[str, Resource] = field(default_factory=dict)
    disks: dict[str, Resource] = field(default_factory=dict)
    snapshots: dict[str, Resource] = field(default_factory=dict)
    images: dict[str, Resource] = field(default_factory=dict)
    eips: dict[str, Resource] = field(default_factory=dict)
    buckets: dict[str, Resource] = field(default_factory=dict)
    quotas: dict[str, dict[str, str]] = field(default_factory=dict)
    """DescribeAccountAttributes' answers by region: attribute name -> value (e.g. max-spot-instance-vcpu-count)."""
    lock: threading.RLock = field(default_factory=threading.RLock)

    def reset(self) -> None:
        with self.lock:
            for table in (self.instances, self.disks, self.snapshots, self.images, self.eips, self.buckets,
                          self.quotas):
                table.clear()

    # --- building -------------------------------------------------------------------------------------------

    def _new(self, prefix: str) -> str:
        return f"{prefix}-{secrets.token_hex(8)}"

    def add_instance(self, region: str, tags: dict[str, str], *, status: str = "Running", spot: bool = False,
                     release_time: datetime | None = None, instance_type: str = "ecs.gn7i-c8g1.2xlarge",
                     locks: tuple[str, ...] = (), stop: dict[str, str] | None = None) -> str:
        """``stop``: DescribeInstances' ``StoppedMode`` / ``SpotInterruptionBehavior`` of the instance."""
        rid = self._new("i")
        self.instances[rid] = Resource(rid, region, dict(tags), status, datetime.now(UTC), {
            "SpotStrategy": "SpotAsPriceGo" if spot else "NoSpot",
            "AutoReleaseTime": _time(release_time),
            "InstanceType": instance_type,
            "OperationLocks": {"LockReason": [{"LockReason": lock} for lock in locks]},
            **(stop or {}),
        })
        return rid

    def add_disk(self, region: str, tags: dict[str, str], *, attach_to: str | None = None, status: str | None = None,
                 delete_with_instance: bool = False, size: int = 100) -> str:
        rid = self._new("d")
        state = status or ("In_use" if attach_to else "Available")
        self.disks[rid] = Resource(rid, region, dict(tags), state, datetime.now(UTC), {
            "InstanceId": attach_to or "", "DeleteWithInstance": delete_with_instance, "Size": size,
            "Category": "cloud_essd", "Type": "data",
        })
        return rid

    def add_snapshot(self, region: str, tags: dict[str, str], *, disk: str | None = None,
                     status: str = "accomplished", created: datetime | None = None) -> str:
        rid = self._new("s")
        self.snapshots[rid] = Resource(rid, region, dict(tags), status, created or datetime.now(UTC),
                                       {"SourceDiskId": disk or "", "SourceDiskSize": "100"})
        return rid

    def add_image(self, region: str, tags: dict[str, str], *, snapshot: str | None = None,
                  status: str = "Available", created: datetime | None = None) -> str:
        rid = self._new("m")
        self.images[rid] = Resource(rid, region, dict(tags), status, created or datetime.now(UTC),
                                    {"ImageName": f"gpulease-{rid}", "SnapshotId": snapshot or ""})
        return rid

    def add_eip(self, region: str, tags: dict[str, str], *, associate_with: str | None = None) -> str:
        rid = self._new("eip")
        self.eips[rid] = Resource(rid, region, dict(tags), "InUse" if associate_with else "Available",
                                  datetime.now(UTC), {"InstanceId": associate_with or "",
                                                      "IpAddress": f"47.0.{len(self.eips) // 250}.{len(self.eips) % 250}"})
        return rid

    def add_bucket(self, region: str, name: str, tags: dict[str, str]) -> str:
        self.buckets[name] = Resource(name, region, dict(tags), "", datetime.now(UTC))
        return name

    def state(self) -> dict[str, str]:
        """Every resource id -> its status (what a test compares before and after)."""
        with self.lock:
            out: dict[str, str] = {}
            for table in (self.instances, self.disks, self.snapshots, self.images, self.eips):
                out.update({rid: r.status for rid, r in table.items()})
            return out


# --- helpers for the handlers ---------------------------------------------------------------------------------


def _matches(resource: Resource, request: RpcRequest) -> bool:
    if request.get("RegionId") and resource.region != request.get("RegionId"):
        return False
    for key, value in request.tag_filters():
        if key not in resource.tags or (value is not None and resource.tags[key] != value):
            return False
    return True


def _ecs_tags(resource: Resource) -> dict:
    return {"Tag": [{"TagKey": k, "TagValue": v} for k, v in resource.tags.items()]}


def _image_disks(account: Any, image: Resource) -> dict:
    """An image's ``Size`` and ``DiskDeviceMappings`` as DescribeImages answers them: the snapshot it was made from."""
    snap = account.snapshots.get(image.extra["SnapshotId"])
    if snap is None:
        return {}
    size = snap.extra["SourceDiskSize"]
    return {"Size": int(size), "DiskDeviceMappings": {"DiskDeviceMapping": [
        {"SnapshotId": snap.id, "Size": size, "Type": "system"}]}}


def _ids(request: RpcRequest, name: str) -> set[str] | None:
    raw = request.get(name)
    if raw is None:
        return None
    try:
        ids = json.loads(raw)
    except ValueError:
        raise ApiError(f"InvalidParameter.{name}", f"The specified {name} is not a JSON array.") from None
    if len(ids) > 100:
        raise ApiError(f"InvalidParameter.{name}", f"{name} accepts up to 100 ids.")
    return set(ids)


def _page_by_token(items: list[dict], request: RpcRequest, ceiling: int) -> tuple[list[dict], str]:
    size = int(request.get("MaxResults") or 10)
    size = 10 if size < 10 else min(size, ceiling)
    token = request.get("NextToken") or ""
    start = int(base64.urlsafe_b64decode(token.encode()).decode()) if token else 0
    page = items[start : start + size]
    more = start + size < len(items)
    return page, base64.urlsafe_b64encode(str(start + size).encode()).decode() if more else ""


def _page_by_number(items: list[dict], request: RpcRequest, ceiling: int = 100) -> tuple[list[dict], dict]:
    size = min(max(1, int(request.get("PageSize") or 10)), ceiling)
    number = max(1, int(request.get("PageNumber") or 1))
    page = items[(number - 1) * size : number * size]
    return page, {"TotalCount": len(items), "PageNumber": number, "PageSize": size}


# --- ECS ------------------------------------------------------------------------------------------------------


def install(stub: AlicloudStub, account: Account) -> None:
    """Register every action above on ``stub``, answering from ``account``."""

    def describe_instances(req: RpcRequest) -> dict:
        ids = _ids(req, "InstanceIds")
        with account.lock:
            rows = [
                {
                    "InstanceId": r.id, "RegionId": r.region, "Status": r.status,
                    "InstanceType": r.extra["InstanceType"], "SpotStrategy": r.extra["SpotStrategy"],
                    "CreationTime": _time(r.created), "StartTime": _time(r.created),
                    "AutoReleaseTime": r.extra["AutoReleaseTime"], "Tags": _ecs_tags(r),
                    "OperationLocks": r.extra.get("OperationLocks") or {"LockReason": []},
                    **{k: r.extra[k] for k in ("StoppedMode", "SpotInterruptionBehavior") if k in r.extra},
                }
                for r in account.instances.values()
                if _matches(r, req) and (ids is None or r.id in ids)
                and (req.get("Status") is None or r.status == req.get("Status"))
            ]
        page, token = _page_by_token(rows, req, 100)
        return {"Instances": {"Instance": page}, "NextToken": token, "TotalCount": len(rows)}

    def delete_instances(req: RpcRequest) -> dict:
        ids = req.numbered("InstanceId")
        if not 1 <= len(ids) <= 100:
            raise ApiError("InvalidParameter.InstanceIds", "InstanceId accepts 1 to 100 ids.")
        force = (req.get("Force") or "false").lower() == "true"
        with account.lock:
            if any(i not in account.instances for i in ids):
                raise ApiError("InvalidInstanceId.NotFound", "The specified InstanceId does not exist.", 404)
            if not force and any(account.instances[i].status == "Running" for i in ids):
                raise ApiError("IncorrectInstanceStatus", "The current status of the resource does not support "
                               "this operation.", 403)
            for i in ids:
                del account.instances[i]
                for disk_id, disk in list(account.disks.items()):
                    if disk.extra["InstanceId"] == i:
                        if disk.extra["DeleteWithInstance"]:
                            del account.disks[disk_id]
                        else:
                            disk.extra["InstanceId"], disk.status = "", "Available"
                for eip in account.eips.values():
                    if eip.extra["InstanceId"] == i:
                        eip.extra["InstanceId"], eip.status = "", "Available"
        return {}

    def start_instance(req: RpcRequest) -> dict:
        iid = req.get("InstanceId") or ""
        with account.lock:
            found = account.instances.get(iid)
            if found is None:
                raise ApiError("InvalidInstanceId.NotFound", "The specified InstanceId does not exist.", 404)
            if found.status != "Stopped":
                raise ApiError("IncorrectInstanceStatus", "The current status of the resource does not support "
                               "this operation.", 403)
            found.status = "Running"
        return {}

    def describe_disks(req: RpcRequest) -> dict:
        ids = _ids(req, "DiskIds")
        with account.lock:
            rows = [
                {
                    "DiskId": r.id, "RegionId": r.region, "Status": r.status, "Size": r.extra["Size"],
                    "Category": r.extra["Category"], "Type": r.extra["Type"], "InstanceId": r.extra["InstanceId"],
                    "DeleteWithInstance": r.extra["DeleteWithInstance"], "CreationTime": _time(r.created),
                    "Tags": _ecs_tags(r),
                }
                for r in account.disks.values()
                if _matches(r, req) and (ids is None or r.id in ids)
            ]
        page, token = _page_by_token(rows, req, 500)
        return {"Disks": {"Disk": page}, "NextToken": token, "TotalCount": len(rows)}

    def delete_disk(req: RpcRequest) -> dict:
        with account.lock:
            disk = account.disks.get(req.get("DiskId") or "")
            if disk is None:
                return {}  # "If the specified DiskId parameter does not exist, the request is ignored."
            if disk.status != "Available":
                raise ApiError("IncorrectDiskStatus", "The current disk status does not support this operation.",
                               403)
            del account.disks[disk.id]
        return {}

    def describe_snapshots(req: RpcRequest) -> dict:
        with account.lock:
            rows = [
                {
                    "SnapshotId": r.id, "Status": r.status, "SourceDiskId": r.extra["SourceDiskId"],
                    "SourceDiskSize": r.extra["SourceDiskSize"], "CreationTime": _time(r.created),
                    "Tags": _ecs_tags(r),
                }
                for r in account.snapshots.values()
                if _matches(r, req)
            ]
        page, token = _page_by_token(rows, req, 100)
        return {"Snapshots": {"Snapshot": page}, "NextToken": token, "TotalCount": len(rows)}

    def delete_snapshot(req: RpcRequest) -> dict:
        force = (req.get("Force") or "false").lower() == "true"
        with account.lock:
            snap = account.snapshots.get(req.get("SnapshotId") or "")
            if snap is None:
                raise ApiError("InvalidSnapshotId.NotFound", "The specified SnapshotId does not exist.", 404)
            if not force and any(i.extra["SnapshotId"] == snap.id for i in account.images.values()):
                raise ApiError("SnapshotCreatedImage", "The snapshot has been used to create user defined image(s).",
                               403)
            del account.snapshots[snap.id]
        return {}

    def describe_images(req: RpcRequest) -> dict:
        wanted = req.get("Status") or "Available"
        statuses = None if wanted.upper() == "ALL" else set(wanted.split(","))
        with account.lock:
            rows = [
                {
                    "ImageId": r.id, "ImageName": r.extra["ImageName"], "Status": r.status,
                    "CreationTime": _time(r.created), "ImageOwnerAlias": "self", "Tags": _ecs_tags(r),
                    # DescribeImages: Size (GiB) and the snapshots of its disks
                    **_image_disks(account, r),
                }
                for r in account.images.values()
                if _matches(r, req) and (statuses is None or r.status in statuses)
            ]
        page, paging = _page_by_number(rows, req)
        return {"Images": {"Image": page}, **paging}

    def delete_image(req: RpcRequest) -> dict:
        with account.lock:
            account.images.pop(req.get("ImageId") or "", None)  # an unknown image is ignored
        return {}

    # --- VPC ----------------------------------------------------------------------------------------------------

    def describe_eips(req: RpcRequest) -> dict:
        with account.lock:
            rows = [
                {
                    "AllocationId": r.id, "IpAddress": r.extra["IpAddress"], "Status": r.status,
                    "InstanceId": r.extra["InstanceId"], "RegionId": r.region,
                    "Tags": {"Tag": [{"Key": k, "Value": v} for k, v in r.tags.items()]},
                }
                for r in account.eips.values()
                if _matches(r, req)
            ]
        page, paging = _page_by_number(rows, req)
        return {"EipAddresses": {"EipAddress": page}, **paging}

    def release_eip(req: RpcRequest) -> dict:
        with account.lock:
            eip = account.eips.get(req.get("AllocationId") or "")
            if eip is None:
                raise ApiError("InvalidAllocationId.NotFound", "Specified allocation ID is not found", 404)
            if eip.status != "Available":
                raise ApiError("IncorrectEipStatus", "Current elastic IP status does not support this operation.")
            del account.eips[eip.id]
        return {}

    def caller_identity(req: RpcRequest) -> dict:
        return {"AccountId": account.account_id, "IdentityType": "Account", "UserId": account.account_id,
                "Arn": f"acs:ram::{account.account_id}:root"}

    def account_attributes(req: RpcRequest) -> dict:
        # The attributes asked for (AttributeName.N), those the region has; ECS answers each with its values.
        names = req.numbered("AttributeName")
        with account.lock:
            known = account.quotas.get(req.get("RegionId") or "", {})
            items = [{"AttributeName": n, "AttributeValues": {"ValueItem": [{"Value": known[n], "Count": 1}]}}
                     for n in names if n in known]
        return {"AccountAttributeItems": {"AccountAttributeItem": items}}

    for version, action, handler in (
        (ECS_VERSION, "DescribeAccountAttributes", account_attributes),
        (ECS_VERSION, "DescribeInstances", describe_instances),
        (ECS_VERSION, "DeleteInstances", delete_instances),
        (ECS_VERSION, "StartInstance", start_instance),
        (ECS_VERSION, "DescribeDisks", describe_disks),
        (ECS_VERSION, "DeleteDisk", delete_disk),
        (ECS_VERSION, "DescribeSnapshots", describe_snapshots),
        (ECS_VERSION, "DeleteSnapshot", delete_snapshot),
        (ECS_VERSION, "DescribeImages", describe_images),
        (ECS_VERSION, "DeleteImage", delete_image),
        (VPC_VERSION, "DescribeEipAddresses", describe_eips),
        (VPC_VERSION, "ReleaseEipAddress", release_eip),
        (STS_VERSION, "GetCallerIdentity", caller_identity),
    ):
        stub.register(version, action, handler)

    # --- OSS ----------------------------------------------------------------------------------------------------

    def list_buckets(bucket: str, path: str, query: dict[str, str]) -> tuple[int, str]:
        key, value = query.get("tag-key"), query.get("tag-value")
        with account.lock:
            names = sorted(
                n for n, b in account.buckets.items()
                if key is None or (key in b.tags and (value is None or b.tags[key] == value))
            )
        marker = query.get("marker") or ""
        names = [n for n in names if n > marker]
        size = int(query.get("max-keys") or 100)
        page, truncated = names[:size], len(names) > size
        rows = "".join(
            f"<Bucket><Name>{escape(n)}</Name><Location>oss-{account.buckets[n].region}</Location>"
            f"<Region>{account.buckets[n].region}</Region><CreationDate>2026-01-01T00:00:00.000Z</CreationDate>"
            "<StorageClass>Standard</StorageClass></Bucket>"
            for n in page
        )
        next_marker = f"<NextMarker>{escape(page[-1])}</NextMarker>" if truncated and page else ""
        return 200, (
            f'<?xml version="1.0" encoding="UTF-8"?><ListAllMyBucketsResult><Owner><ID>{account.account_id}</ID>'
            f"</Owner><IsTruncated>{str(truncated).lower()}</IsTruncated>{next_marker}<Buckets>{rows}</Buckets>"
            "</ListAllMyBucketsResult>"
        )

    def bucket_tags(bucket: str, path: str, query: dict[str, str]) -> tuple[int, str]:
        found = account.buckets.get(bucket)
        if found is None:
            return 404, "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist.</Message></Error>"
        tags = "".join(f"<Tag><Key>{escape(k)}</Key><Value>{escape(v)}</Value></Tag>" for k, v in found.tags.items())
        return 200, f'<?xml version="1.0" encoding="UTF-8"?><Tagging><TagSet>{tags}</TagSet></Tagging>'

    stub.register_oss("ListBuckets", list_buckets)
    stub.register_oss("GetBucketTags", bucket_tags)


