"""The mocks' answers for the workflow before training: ready records in the bucket, baked images and their
snapshots, and the ``bakedImage`` output of a stack another stack references.

- Ready records: the bootstrap writes ``_gpulease/<prefix>ready/<instance id>.json`` once readiness passed; the
  mocks list one for every instance they created (``MockState.ready``: set it False to play an instance that has
  not passed yet); objects an earlier update wrote (``MockState.objects``: a baked record) are listed too.
- A stack reference (``pulumi:pulumi:StackReference``) answers with the ``bakedImage`` output a baking stack
  exports (``components/image_bake.py``): the cloud and experiment are read from ``stacks/Pulumi.<name>.yaml``
  when that stack is in this project (else guessed from the region), the image was baked three days before the
  review's moment and is kept 30 days, the default.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from components.image_bake import READY_FOLDER, RECORDS_ROOT
from gpulease.core import vocabulary as v
from gpulease.review.mock_ids import _hex
from gpulease.review.mock_registry import MockState, register_answers

STACKS_DIR = Path(__file__).resolve().parents[2] / "stacks"
BAKED_DAYS_AGO = 3


def _is_ready_folder(prefix: str) -> bool:
    """A listing of ready records (``components.image_bake.ready_folder``: ``_gpulease/<prefix>ready/``)."""
    return prefix.startswith(RECORDS_ROOT) and prefix.endswith(READY_FOLDER)


def _ready_keys(m: MockState, prefix: str) -> list[str]:
    return [f"{prefix}{iid}.json" for iid in m.instances] if m.ready else []


def _stored_keys(m: MockState, prefix: str) -> list[str]:
    """Objects an earlier update wrote (``MockState.objects``) under ``prefix``."""
    return sorted(k for k in m.objects if k.startswith(prefix))


def aws_get_objects(m: MockState, a: dict) -> dict:
    prefix = str(a.get("prefix") or "")
    keys = (_ready_keys(m, prefix) if _is_ready_folder(prefix) else []) + _stored_keys(m, prefix)
    return {"bucket": a.get("bucket"), "prefix": prefix, "keys": keys, "commonPrefixes": [], "owners": [],
            "id": a.get("bucket")}


def ali_bucket_objects(m: MockState, a: dict) -> dict:
    prefix = str(a.get("keyPrefix") or "")
    keys = (_ready_keys(m, prefix) if _is_ready_folder(prefix) else []) + _stored_keys(m, prefix)
    objects = [{"key": k, "contentLength": "1024", "contentType": "application/json", "etag": _hex("etag", k, length=32),
                "lastModificationTime": "", "storageClass": "Standard", "acl": "default", "cacheControl": "",
                "contentDisposition": "", "contentEncoding": "", "contentMd5": "", "expires": "",
                "serverSideEncryption": "AES256", "sseKmsKeyId": ""} for k in keys]
    return {"bucketName": a.get("bucketName"), "keyPrefix": prefix, "objects": objects, "id": a.get("bucketName")}


def _referenced(name: str, m: MockState) -> tuple[str, str]:
    """(cloud, experiment) of the referenced stack: from its stack file here, else guessed."""
    stack = name.rsplit("/", 1)[-1]
    path = STACKS_DIR / f"Pulumi.{stack}.yaml"
    try:
        config = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("config") or {}
        spec = config.get("gpulease:experiment") or (config.get("gpulease:sweep") or {}).get("base") or {}
        return ("alicloud" if "alicloud:region" in config else "aws"), str(spec.get("name") or stack)
    except (OSError, yaml.YAMLError, AttributeError):
        return ("alicloud" if m.region.startswith("cn-") else "aws"), stack


def baked_image(name: str, m: MockState) -> dict[str, Any]:
    cloud, experiment = _referenced(name, m)
    now = m.now or datetime.now(UTC)
    created = (now - timedelta(days=BAKED_DAYS_AGO)).replace(microsecond=0)
    image = f"ami-{_hex('baked', name)}" if cloud == "aws" else f"m-{m.region[:2]}{_hex('baked', name, length=18)}"
    return {"id": image, "stack": name.rsplit("/", 1)[-1], "experiment": experiment, "createdAt": v.rfc3339(created),
            "retainUntil": v.rfc3339(created + timedelta(days=30))}


def stack_reference(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    ref = str(i.get("name") or name)
    return ref, {"name": ref, "outputs": {"bakedImage": baked_image(ref, m)}, "secretOutputNames": []}


def aws_snapshot(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    sid = f"snap-{_hex('snapshot', name)}"
    return sid, {"arn": m.arn("ec2", f"snapshot/{sid}", region=True), "encrypted": True, "volumeSize": 100}


def aws_ami(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    ami = f"ami-{_hex('baked-ami', name)}"
    return ami, {"arn": m.arn("ec2", f"image/{ami}"), "imageLocation": f"123456789012/{i.get('name')}",
                 "ownerId": "123456789012", "rootSnapshotId": (i.get("ebsBlockDevices") or [{}])[0].get("snapshotId")}


def ali_snapshot(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    return f"s-{m.region[:2]}{_hex('ali-snapshot', name, length=18)}", {"status": "accomplished"}


def ali_image(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    return f"m-{m.region[:2]}{_hex('ali-image', name, length=18)}", {"status": "Available"}


CALLS: dict[str, Any] = {
    "aws:s3/getObjects:getObjects": aws_get_objects,
    "alicloud:oss/getBucketObjects:getBucketObjects": ali_bucket_objects,
}
RESOURCES: dict[str, Any] = {
    "pulumi:pulumi:StackReference": stack_reference,
    "aws:ebs/snapshot:Snapshot": aws_snapshot,
    "aws:ec2/ami:Ami": aws_ami,
    "alicloud:ecs/ecsSnapshot:EcsSnapshot": ali_snapshot,
    "alicloud:ecs/image:Image": ali_image,
}

register_answers(CALLS, RESOURCES)
