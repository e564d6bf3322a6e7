"""What gpulease recognises in a stack: each cloud's resource type tokens, and the one reading of its tag values.

Type tokens are the engine's (``package:module/name:Class``), as a program registers them and as the policy pack,
the cost model, the offline review's mocks and its report see them. They are listed here once; a reader that
needs "every bucket" or "every data disk" takes the group below, so a type added to a group reaches the pack and
the cost model alike.

Tag values are strings on both clouds (``gpulease.core.vocabulary`` holds the keys). ``retain_tag`` is the one
reading of ``gpulease:retain``: True or False when the tag says so (any case, surrounding spaces ignored), None
when it is missing or says anything else. What None means is each reader's to decide, and each says so: the
reaper, which deletes, keeps such a resource; the pack's retention rule, which guards, does not count it as
retained; the cost model bills after destroy only what is declared retained.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gpulease.core import vocabulary as v

# --- AWS (pulumi_aws) ---------------------------------------------------------------------------------------
AWS_INSTANCE = "aws:ec2/instance:Instance"
AWS_SPOT_REQUEST = "aws:ec2/spotInstanceRequest:SpotInstanceRequest"
AWS_LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
AWS_VOLUME = "aws:ebs/volume:Volume"
AWS_EIP = "aws:ec2/eip:Eip"
AWS_SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
AWS_SECURITY_GROUP_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
AWS_INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
AWS_EGRESS_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
AWS_SCHEDULE = "aws:scheduler/schedule:Schedule"
AWS_BUCKET = "aws:s3/bucket:Bucket"
AWS_BUCKET_V2 = "aws:s3/bucketV2:BucketV2"
"""pulumi_aws's earlier name of the same bucket resource (deprecated, same inputs): a bucket like any other."""
AWS_BUCKET_PUBLIC_ACCESS_BLOCK = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
AWS_ACCOUNT_PUBLIC_ACCESS_BLOCK = "aws:s3/accountPublicAccessBlock:AccountPublicAccessBlock"
AWS_BUCKET_ACL = "aws:s3/bucketAcl:BucketAcl"
AWS_BUCKET_VERSIONING = "aws:s3/bucketVersioning:BucketVersioning"
AWS_BUCKET_LIFECYCLE = "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"
AWS_BUDGET = "aws:budgets/budget:Budget"
"""A stack's budget alert (``gpulease.core.budget_alert``); Alibaba Cloud's provider has none."""
TERMINATE_TARGET = "arn:aws:scheduler:::aws-sdk:ec2:terminateInstances"
"""EventBridge Scheduler's universal target that calls EC2 TerminateInstances (the deadline's schedule)."""

# --- Alibaba Cloud (pulumi_alicloud) ------------------------------------------------------------------------
ALI_INSTANCE = "alicloud:ecs/instance:Instance"
ALI_ECS_DISK = "alicloud:ecs/ecsDisk:EcsDisk"
ALI_DISK = "alicloud:ecs/disk:Disk"
"""The provider's older disk resource; priced and judged like ``EcsDisk``."""
ALI_DISK_ATTACHMENTS = ("alicloud:ecs/ecsDiskAttachment:EcsDiskAttachment", "alicloud:ecs/diskAttachment:DiskAttachment")
ALI_SECURITY_GROUP_RULE = "alicloud:ecs/securityGroupRule:SecurityGroupRule"
ALI_BUCKET = "alicloud:oss/bucket:Bucket"
ALI_BUCKET_PUBLIC_ACCESS_BLOCK = "alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock"
ALI_ACCOUNT_PUBLIC_ACCESS_BLOCK = "alicloud:oss/accountPublicAccessBlock:AccountPublicAccessBlock"
ALI_BUCKET_ACL = "alicloud:oss/bucketAcl:BucketAcl"
ALI_BUCKET_VERSIONING = "alicloud:oss/bucketVersioning:BucketVersioning"
ALI_BUCKET_ENCRYPTION = "alicloud:oss/bucketServerSideEncryption:BucketServerSideEncryption"

# --- the deadline record (pulumiverse_time) -----------------------------------------------------------------
TIME_STATIC = "time:index/static:Static"

# --- groups -------------------------------------------------------------------------------------------------
AWS_INSTANCES = (AWS_INSTANCE, AWS_SPOT_REQUEST)
INSTANCE_TYPES = (AWS_INSTANCE, AWS_SPOT_REQUEST, ALI_INSTANCE)
ALI_DISKS = (ALI_ECS_DISK, ALI_DISK)
DATA_DISK_TYPES = (AWS_VOLUME, *ALI_DISKS)
AWS_BUCKETS = (AWS_BUCKET, AWS_BUCKET_V2)
BUCKET_TYPES = (*AWS_BUCKETS, ALI_BUCKET)


# --- tag values ---------------------------------------------------------------------------------------------


def retain_tag(tags: Mapping[str, Any] | None) -> bool | None:
    """``gpulease:retain`` read: True or False when it says so, None when missing or unreadable (see above)."""
    value = (tags or {}).get(v.TAG_RETAIN)
    if isinstance(value, bool):
        return value
    if not isinstance(value, str):
        return None
    return {"true": True, "false": False}.get(value.strip().lower())


def flag(value: Any) -> bool:
    """A boolean as the engine sends it: a real bool, or "true" (any case) in some provider schemas."""
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return value is True


def number(value: Any) -> float | None:
    """A finite number, from a number or its text; None when absent, a boolean, not a number, NaN or infinite
    (NaN passes every comparison-based check: "nan" <= 0 is false)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        parsed = float(value)
    except (TypeError, ValueError):
        return None
    return parsed if math.isfinite(parsed) else None
