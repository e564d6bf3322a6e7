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
AWS_NATIVE_LAUNCH_TEMPLATE = "aws-native:ec2:LaunchTemplate"
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
CANCEL_SPOT_TARGET = "arn:aws:scheduler:::aws-sdk:ec2:cancelSpotInstanceRequests"
"""The universal target that calls EC2 CancelSpotInstanceRequests (a persistent request's end, before the
termination; https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-targets-universal.html)."""
AWS_EC2_TAG = "aws:ec2/tag:Tag"
"""One tag on one EC2 resource (the kit's persistent spot request carries the instance's tags this way)."""
# Compute forms besides the instance (gpulease.core.compute.aws_forms reads them), and what bounds them.
AWS_LAUNCH_CONFIGURATION = "aws:ec2/launchConfiguration:LaunchConfiguration"
AWS_AUTOSCALING_GROUP = "aws:autoscaling/group:Group"
AWS_AUTOSCALING_SCHEDULE = "aws:autoscaling/schedule:Schedule"
AWS_FLEET = "aws:ec2/fleet:Fleet"
AWS_SPOT_FLEET = "aws:ec2/spotFleetRequest:SpotFleetRequest"
AWS_EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
AWS_ECS_CAPACITY_PROVIDER = "aws:ecs/capacityProvider:CapacityProvider"
# Identity and access (the access rules read them).
AWS_IAM_ROLE = "aws:iam/role:Role"
AWS_IAM_ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
AWS_IAM_POLICY = "aws:iam/policy:Policy"
AWS_IAM_ROLE_POLICY_ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
AWS_IAM_POLICY_ATTACHMENT = "aws:iam/policyAttachment:PolicyAttachment"
AWS_IAM_INSTANCE_PROFILE = "aws:iam/instanceProfile:InstanceProfile"
AWS_BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
AWS_EIP_ASSOCIATION = "aws:ec2/eipAssociation:EipAssociation"
AWS_BUCKET_OBJECTS = ("aws:s3/bucketObject:BucketObject", "aws:s3/bucketObjectv2:BucketObjectv2")

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
ALI_BUCKET_POLICY = "alicloud:oss/bucketPolicy:BucketPolicy"
ALI_BUCKET_OBJECT = "alicloud:oss/bucketObject:BucketObject"
# Compute forms besides the instance (gpulease.core.compute.alicloud_forms reads them), and what bounds them.
ALI_INSTANCE_SET = "alicloud:ecs/ecsInstanceSet:EcsInstanceSet"
ALI_LAUNCH_TEMPLATES = ("alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate", "alicloud:ecs/launchTemplate:LaunchTemplate")
ALI_SCALING_GROUP = "alicloud:ess/scalingGroup:ScalingGroup"
ALI_SCALING_CONFIGURATION = "alicloud:ess/scalingConfiguration:ScalingConfiguration"
ALI_SCHEDULED_TASK = "alicloud:ess/scheduledTask:ScheduledTask"
ALI_NODE_POOL = "alicloud:cs/nodePool:NodePool"
# Identity and access (the access rules read them).
ALI_RAM_ROLE = "alicloud:ram/role:Role"
ALI_RAM_POLICY = "alicloud:ram/policy:Policy"
ALI_RAM_ROLE_POLICY_ATTACHMENT = "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment"
ALI_EIP_ASSOCIATION = "alicloud:ecs/eipAssociation:EipAssociation"

# --- the deadline record (pulumiverse_time) -----------------------------------------------------------------
TIME_STATIC = "time:index/static:Static"

# --- groups -------------------------------------------------------------------------------------------------
AWS_INSTANCES = (AWS_INSTANCE, AWS_SPOT_REQUEST)
INSTANCE_TYPES = (AWS_INSTANCE, AWS_SPOT_REQUEST, ALI_INSTANCE)
ALI_DISKS = (ALI_ECS_DISK, ALI_DISK)
DATA_DISK_TYPES = (AWS_VOLUME, *ALI_DISKS)
AWS_BUCKETS = (AWS_BUCKET, AWS_BUCKET_V2)
BUCKET_TYPES = (*AWS_BUCKETS, ALI_BUCKET)
BUCKET_OBJECT_TYPES = (*AWS_BUCKET_OBJECTS, ALI_BUCKET_OBJECT)
"""Objects in a bucket: billed as the bucket's storage, and their tags are object tags, not cost-allocation tags
(S3: "cost allocation tags ... on S3 buckets", https://docs.aws.amazon.com/AmazonS3/latest/userguide/CostAllocTagging.html;
an object takes at most 10 tags, https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-tagging.html), so
the accounting tags are not demanded on them."""

FREE_TYPE_PREFIXES: tuple[str, ...] = (
    "pulumi:", "gpulease:", "time:", "random:", "tls:", "command:",
    # IAM / RAM: no charge (https://aws.amazon.com/iam/faqs/ ; https://www.alibabacloud.com/product/ram).
    "aws:iam/", "alicloud:ram/",
    # Settings of a bucket: its storage is the bucket's line.
    "aws:s3/bucket", "alicloud:oss/bucket",
)
"""Type-token prefixes of resources that cost nothing by themselves (or are billed through another line)."""
FREE_TYPES: frozenset[str] = frozenset({
    # Networking pieces without an hourly charge (VPC pricing: NAT gateways, endpoints and public IPv4 are the
    # charged parts, https://aws.amazon.com/vpc/pricing/ ; Alibaba VPC and vSwitch are free,
    # https://www.alibabacloud.com/help/en/vpc/product-overview/billing).
    "aws:ec2/vpc:Vpc", "aws:ec2/subnet:Subnet", "aws:ec2/routeTable:RouteTable",
    "aws:ec2/routeTableAssociation:RouteTableAssociation", "aws:ec2/route:Route",
    "aws:ec2/internetGateway:InternetGateway", "aws:ec2/securityGroup:SecurityGroup",
    "aws:ec2/securityGroupRule:SecurityGroupRule", "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule", "aws:ec2/keyPair:KeyPair",
    "aws:ec2/volumeAttachment:VolumeAttachment", "aws:ec2/eipAssociation:EipAssociation",
    "aws:ec2/defaultVpc:DefaultVpc", "aws:ec2/defaultSubnet:DefaultSubnet",
    "alicloud:vpc/network:Network", "alicloud:vpc/switch:Switch", "alicloud:ecs/securityGroup:SecurityGroup",
    "alicloud:ecs/securityGroupRule:SecurityGroupRule", "alicloud:ecs/ecsKeyPair:EcsKeyPair",
    "alicloud:ecs/keyPair:KeyPair", "alicloud:ecs/ramRoleAttachment:RamRoleAttachment",
    "alicloud:ecs/eipAssociation:EipAssociation", *ALI_DISK_ATTACHMENTS,
    # "There is no charge for creating a placement group."
    # (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/placement-groups.html). Alibaba Cloud states no price for
    # a deployment set; ECS's billable resources are computing resources, images, block storage, public bandwidth
    # and snapshots (https://www.alibabacloud.com/help/en/elastic-compute-service/latest/billing-overview), and a
    # deployment set is none of them (an unpriced type would make every cluster's worst case unknown).
    "aws:ec2/placementGroup:PlacementGroup", "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet",
    # Templates and timers: the instances they launch, or stop, are the billed part.
    AWS_LAUNCH_TEMPLATE, AWS_LAUNCH_CONFIGURATION, AWS_AUTOSCALING_SCHEDULE, AWS_SCHEDULE,
    AWS_ECS_CAPACITY_PROVIDER, "aws:ecs/cluster:Cluster", "aws:ecs/clusterCapacityProviders:ClusterCapacityProviders",
    *ALI_LAUNCH_TEMPLATES, ALI_SCALING_CONFIGURATION, ALI_SCHEDULED_TASK,
    # A tag is metadata on the resource it names, which is the billed part
    # (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html): the kit's spot request's tags.
    AWS_EC2_TAG,
    # A budget without budget actions (the stack's budget alert): "Budgets without actions: free"
    # (https://aws.amazon.com/aws-cost-management/aws-budgets/pricing/; older user-guide versions charged $0.02 a
    # day for each active budget past the first two: see docs/run.md#budget-alerts).
    AWS_BUDGET,
})
"""Resource types that cost nothing by themselves (a type neither priced nor listed here is "unpriced")."""


def is_free_type(type_: str) -> bool:
    """True when a resource of this type costs nothing by itself (see ``FREE_TYPES``)."""
    return type_ in FREE_TYPES or type_.startswith(FREE_TYPE_PREFIXES)


def module_type(type_: str) -> str:
    """``aws:rds/instance:Instance`` → ``rds:Instance``: the module keeps an RDS and an EC2 instance apart."""
    parts = type_.split(":")
    if len(parts) != 3:
        return type_
    module = parts[1].split("/")[0]
    return f"{module}:{parts[2]}" if module and module != "index" else f"{parts[0]}:{parts[2]}"


# --- tag values ---------------------------------------------------------------------------------------------


def retain_tag(tags: Mapping[str, Any] | None) -> bool | None:
    """``gpulease:retain`` read: True or False when it says so, None when missing or unreadable (see above)."""
    value = (tags or {}).get(v.TAG_RETAIN)
    if isinstance(value, bool):
        return value
    if not isinstance(value, str):
        return None
    return {"true": True, "false": False}.get(value.strip().lower())


def tag_map(raw: Any) -> dict[str, Any]:
    """Tags as a mapping, from either form the providers use: a map (most resources) or a list of
    ``{key, value[, propagateAtLaunch]}`` blocks (``aws.autoscaling.Group``'s ``tags``; ``Key``/``Value`` from the
    APIs). Anything else is no tags."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, list | tuple):
        out: dict[str, Any] = {}
        for item in raw:
            if isinstance(item, Mapping):
                key = item.get("key", item.get("Key"))
                if isinstance(key, str):
                    out[key] = item.get("value", item.get("Value"))
        return out
    return {}


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
