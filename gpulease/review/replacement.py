"""What a change to a stack replaces: the replace-triggering inputs of every resource type gpulease registers, and
a classifier that diffs two renderings of a stack the way the engine plans the update.

Mocks show what a program registers, not what a provider does with it. Whether an input change is an update
in place or a replacement (``ForceNew`` in the Terraform providers that pulumi-aws and pulumi-alicloud bridge)
is a provider fact, so it lives here in one table with its source, and ``classify`` applies it the way the
engine does:

- a changed input listed for the type (or named in the resource's ``replaceOnChanges``) replaces the resource;
- a resource replaced makes every input that refers to it unknown until the new one exists, so a dependent whose
  replace-triggering input refers to it is replaced too (the engine's "dependent replacement"); other dependents
  are updated in place once the new resource exists;
- inputs under ``ignoreChanges`` keep their recorded value (the rendering of the update already applies this), also
  when they refer to a replaced resource: an ignored input never makes its resource a dependent replacement.

Paths are the engine's property names (camelCase), dotted into nested objects. The sources are the provider
documentation pages named per type and, where noted in docs/provider-facts.md, the provider source read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from gpulease.review.render import CapturedResource, Rendering

AWS_DOCS = "https://registry.terraform.io/providers/hashicorp/aws/latest/docs/resources/"
ALI_DOCS = "https://registry.terraform.io/providers/aliyun/alicloud/latest/docs/resources/"


@dataclass(frozen=True)
class TypeRule:
    """The replace-triggering inputs of one resource type and where that is documented."""

    replace_on: tuple[str, ...]
    source: str
    when: Mapping[str, tuple[str, Any]] = field(default_factory=dict)
    """Inputs that trigger replacement only when another input has a value: path -> (other path, value)."""
    in_place: Mapping[str, str] = field(default_factory=dict)
    """Inputs updated in place with a side effect worth a reviewer's eye: path -> what happens."""
    on_replace: Mapping[str, str] = field(default_factory=dict)
    """Replace-triggering inputs whose replacement does more than delete and create: path -> what happens."""


REPLACE_TRIGGERS: dict[str, TypeRule] = {
    # --- AWS (terraform-provider-aws, bridged by pulumi-aws 7.x) ---------------------------------------------
    "aws:ec2/instance:Instance": TypeRule(
        ("ami", "associatePublicIpAddress", "availabilityZone", "subnetId", "keyName", "privateIp",
         "instanceMarketOptions", "ebsOptimized", "rootBlockDevice.encrypted", "rootBlockDevice.kmsKeyId",
         "placementGroup", "launchTemplate"),
        AWS_DOCS + "instance (ForceNew in internal/service/ec2/ec2_instance.go); user_data_replace_on_change: "
        "pulumi_aws ec2.Instance docstring",
        when={"userDataBase64": ("userDataReplaceOnChange", True), "userData": ("userDataReplaceOnChange", True)},
        in_place={"instanceType": "stops and starts the instance", "userDataBase64": "stops and starts the instance"},
        on_replace={"instanceMarketOptions": (
            "the old instance's spot request is cancelled and the instance terminated before the new one is launched "
            "(resourceInstanceDelete: CancelSpotInstanceRequests when instance_lifecycle is spot, then "
            "TerminateInstances), so the old request never launches another one")},
    ),
    "aws:ebs/volume:Volume": TypeRule(
        ("availabilityZone", "encrypted", "kmsKeyId", "snapshotId", "outpostArn", "multiAttachEnabled"),
        AWS_DOCS + "ebs_volume (ForceNew in internal/service/ec2/ebs_volume.go; size, type, iops and throughput "
        "change through ModifyVolume)",
    ),
    "aws:ec2/volumeAttachment:VolumeAttachment": TypeRule(
        ("deviceName", "instanceId", "volumeId"),
        AWS_DOCS + "volume_attachment (ForceNew in internal/service/ec2/ebs_volume_attachment.go)",
    ),
    "aws:ec2/keyPair:KeyPair": TypeRule(("keyName", "keyNamePrefix", "publicKey"), AWS_DOCS + "key_pair"),
    "aws:ec2/securityGroup:SecurityGroup": TypeRule(
        ("name", "namePrefix", "description", "vpcId"), AWS_DOCS + "security_group",
    ),
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": TypeRule(
        ("securityGroupId",), AWS_DOCS + "vpc_security_group_ingress_rule",
    ),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": TypeRule(
        ("securityGroupId",), AWS_DOCS + "vpc_security_group_egress_rule",
    ),
    "aws:iam/role:Role": TypeRule(("name", "namePrefix", "path"), AWS_DOCS + "iam_role"),
    "aws:iam/rolePolicy:RolePolicy": TypeRule(("name", "namePrefix", "role"), AWS_DOCS + "iam_role_policy"),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": TypeRule(
        ("role", "policyArn"), AWS_DOCS + "iam_role_policy_attachment",
    ),
    "aws:iam/instanceProfile:InstanceProfile": TypeRule(
        ("name", "namePrefix", "path"), AWS_DOCS + "iam_instance_profile",
    ),
    "aws:s3/bucket:Bucket": TypeRule(("bucket", "bucketPrefix", "objectLockEnabled"), AWS_DOCS + "s3_bucket"),
    "aws:s3/bucketObjectv2:BucketObjectv2": TypeRule(
        ("bucket", "key"),
        AWS_DOCS + "s3_object (ForceNew in internal/service/s3/object.go; content is put again in place)",
    ),
    "aws:s3/bucketOwnershipControls:BucketOwnershipControls": TypeRule(
        ("bucket",), AWS_DOCS + "s3_bucket_ownership_controls",
    ),
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": TypeRule(
        ("bucket",), AWS_DOCS + "s3_bucket_public_access_block",
    ),
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": TypeRule(
        ("bucket", "expectedBucketOwner"), AWS_DOCS + "s3_bucket_server_side_encryption_configuration",
    ),
    "aws:s3/bucketVersioning:BucketVersioning": TypeRule(
        ("bucket", "expectedBucketOwner"), AWS_DOCS + "s3_bucket_versioning",
    ),
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": TypeRule(
        ("bucket", "expectedBucketOwner"), AWS_DOCS + "s3_bucket_lifecycle_configuration",
    ),
    "aws:s3/bucketPolicy:BucketPolicy": TypeRule(("bucket",), AWS_DOCS + "s3_bucket_policy"),
    "aws:ec2/tag:Tag": TypeRule(
        ("resourceId", "key"),
        AWS_DOCS + "ec2_tag (one tag on one resource: another resource or key is another tag; the value is written "
        "again in place by CreateTags, which overwrites it: "
        "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateTags.html)",
    ),
    "aws:scheduler/schedule:Schedule": TypeRule(
        ("name", "namePrefix", "groupName"), AWS_DOCS + "scheduler_schedule",
    ),
    # A cluster's pieces (components/aws/cluster.py).
    "aws:ec2/launchTemplate:LaunchTemplate": TypeRule(
        ("name", "namePrefix"), AWS_DOCS + "launch_template (other changes make a new version; the instance names "
        "the version, so a new one replaces the instance through launchTemplate)",
    ),
    "aws:ec2/placementGroup:PlacementGroup": TypeRule(
        ("name", "strategy", "partitionCount", "spreadLevel"),
        AWS_DOCS + "placement_group (every argument ForceNew)",
    ),
    "aws:ec2/eip:Eip": TypeRule(
        ("domain", "address", "publicIpv4Pool", "customerOwnedIpv4Pool", "networkBorderGroup"),
        AWS_DOCS + "eip (the instance association is updated in place)",
    ),
    # A baked image (components/aws/workflow.py): the system disk's snapshot and the image registered from it.
    "aws:ebs/snapshot:Snapshot": TypeRule(
        ("volumeId", "description", "outpostArn"),
        AWS_DOCS + "ebs_snapshot (ForceNew in internal/service/ec2/ebs_snapshot.go)",
    ),
    "aws:ec2/ami:Ami": TypeRule(
        ("name", "architecture", "bootMode", "ebsBlockDevices", "enaSupport", "ephemeralBlockDevices", "imageLocation",
         "imdsSupport", "kernelId", "ramdiskId", "rootDeviceName", "sriovNetSupport", "tpmSupport", "uefiData",
         "virtualizationType"),
        AWS_DOCS + "ami (ForceNew in internal/service/ec2/ec2_ami.go; description and deprecation time in place)",
    ),
    "time:index/static:Static": TypeRule(
        ("rfc3339", "triggers"),
        "https://registry.terraform.io/providers/hashicorp/time/latest/docs/resources/static (pulumiverse_time "
        "Static docstring: triggers 'will trigger a new base timestamp')",
    ),
    "aws:budgets/budget:Budget": TypeRule(
        ("accountId", "name", "namePrefix"),
        AWS_DOCS + "budgets_budget (ForceNew in internal/service/budgets/budget.go)",
    ),
    "pulumi:providers:aws": TypeRule(("region",), "Pulumi engine: a provider replaced replaces its resources"),
    # --- Alibaba Cloud (terraform-provider-alicloud, bridged by pulumi-alicloud 4.0.0) -------------------------
    "alicloud:ecs/instance:Instance": TypeRule(
        ("availabilityZone", "spotStrategy", "spotPriceLimit", "systemDiskCategory", "systemDiskEncrypted",
         "systemDiskKmsKeyId", "systemDiskEncryptAlgorithm", "systemDiskStorageClusterId",
         "securityEnhancementStrategy", "dataDisks", "hpcClusterId", "networkInterfaces"),
        ALI_DOCS + "instance (ForceNew); image_id, user_data, key_name, private_ip and network_interfaces (\"immutable "
        "after resource creation\"): pulumi_alicloud ecs.Instance docstring",
        in_place={
            "imageId": "stops the instance and replaces its system disk (unless replaceOnChanges)",
            "userData": "reboots the instance",
            "instanceType": "reboots the instance",
            "keyName": "reboots the instance",
            "hostName": "reboots the instance",
            "vswitchId": "reboots the instance",
            "privateIp": "reboots the instance",
            "deploymentSetId": "moves the instance to the set (ModifyInstanceDeployment)",
        },
    ),
    "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet": TypeRule(
        ("strategy", "domain", "granularity"), ALI_DOCS + "ecs_deployment_set (strategy ForceNew)",
    ),
    "alicloud:ecs/ecsDisk:EcsDisk": TypeRule(
        ("zoneId", "availabilityZone", "encrypted", "kmsKeyId", "snapshotId", "instanceId", "storageSetId",
         "storageSetPartitionNumber"),
        ALI_DOCS + "ecs_disk (size grows in place; it cannot shrink)",
    ),
    "alicloud:ecs/ecsDiskAttachment:EcsDiskAttachment": TypeRule(
        ("instanceId", "diskId", "bootable", "keyPairName", "password"), ALI_DOCS + "ecs_disk_attachment",
    ),
    "alicloud:ecs/ecsKeyPair:EcsKeyPair": TypeRule(
        ("keyPairName", "keyName", "keyNamePrefix", "publicKey"), ALI_DOCS + "ecs_key_pair",
    ),
    "alicloud:ecs/securityGroup:SecurityGroup": TypeRule(
        ("vpcId", "securityGroupType"), ALI_DOCS + "security_group",
    ),
    "alicloud:ecs/securityGroupRule:SecurityGroupRule": TypeRule(
        ("type", "ipProtocol", "portRange", "securityGroupId", "nicType", "policy", "priority", "cidrIp",
         "ipv6CidrIp", "sourceSecurityGroupId", "sourceGroupOwnerAccount", "prefixListId"),
        ALI_DOCS + "security_group_rule",
    ),
    "alicloud:ecs/ramRoleAttachment:RamRoleAttachment": TypeRule(
        ("instanceId", "ramRoleName"), ALI_DOCS + "ecs_ram_role_attachment",
    ),
    "alicloud:vpc/network:Network": TypeRule(("cidrBlock",), ALI_DOCS + "vpc"),
    "alicloud:vpc/switch:Switch": TypeRule(("vpcId", "zoneId", "cidrBlock"), ALI_DOCS + "vswitch"),
    "alicloud:oss/bucketObject:BucketObject": TypeRule(
        ("bucket", "key"),
        ALI_DOCS + "oss_bucket_object (ForceNew in alicloud/resource_alicloud_oss_bucket_object.go, whose Update "
        "is the same PutObject as Create)",
    ),
    "alicloud:oss/bucket:Bucket": TypeRule(
        ("bucket", "storageClass", "redundancyType"),
        ALI_DOCS + "oss_bucket (ForceNew in alicloud/resource_alicloud_oss_bucket.go)",
    ),
    "alicloud:oss/bucketAcl:BucketAcl": TypeRule(("bucket",), ALI_DOCS + "oss_bucket_acl"),
    "alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock": TypeRule(
        ("bucket",), ALI_DOCS + "oss_bucket_public_access_block",
    ),
    "alicloud:oss/bucketPolicy:BucketPolicy": TypeRule(("bucket",), ALI_DOCS + "oss_bucket_policy"),
    "alicloud:ram/role:Role": TypeRule(("roleName", "name"), ALI_DOCS + "ram_role"),
    "alicloud:ram/policy:Policy": TypeRule(("policyName", "name"), ALI_DOCS + "ram_policy"),
    "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment": TypeRule(
        ("roleName", "policyName", "policyType"), ALI_DOCS + "ram_role_policy_attachment",
    ),
    "alicloud:ecs/ecsSnapshot:EcsSnapshot": TypeRule(
        ("diskId", "category"), ALI_DOCS + "ecs_snapshot (ForceNew in alicloud/resource_alicloud_ecs_snapshot.go)",
    ),
    "alicloud:ecs/image:Image": TypeRule(
        ("architecture", "diskDeviceMappings", "platform", "imageVersion", "features"),
        ALI_DOCS + "image (ForceNew in alicloud/resource_alicloud_image.go; snapshot_id, image_name and description "
        "are not)",
    ),
    "pulumi:providers:alicloud": TypeRule(("region",), "Pulumi engine: a provider replaced replaces its resources"),
}

Action = Literal["create", "delete", "replace", "update", "same"]


@dataclass
class Change:
    """What the engine would do to one resource between two renderings of a stack."""

    urn: str
    type: str
    name: str
    action: Action
    changed: list[str] = field(default_factory=list)
    """Changed input paths."""
    triggers: list[str] = field(default_factory=list)
    """Why it is replaced: the changed replace-triggering paths, or ``<input> <- <replaced resource>``."""
    delete_before_replace: bool = False
    notes: list[str] = field(default_factory=list)


class UnknownTypeError(KeyError):
    """A resource type with no entry in ``REPLACE_TRIGGERS``: its replacements cannot be predicted."""


def rule_for(type_: str) -> TypeRule:
    try:
        return REPLACE_TRIGGERS[type_]
    except KeyError:
        raise UnknownTypeError(f"{type_} has no replace-trigger entry in gpulease/review/replacement.py") from None


def changed_paths(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted paths whose values differ; objects are compared key by key, lists as a whole."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        out: list[str] = []
        for key in sorted(set(old) | set(new)):
            path = f"{prefix}.{key}" if prefix else str(key)
            out += changed_paths(old.get(key), new.get(key), path)
        return out
    return [] if old == new else [prefix]


def _get(data: Mapping[str, Any], dotted: str) -> Any:
    value: Any = data
    for part in dotted.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _covers(trigger: str, path: str) -> bool:
    """``trigger`` is ``path`` or an object above or below it."""
    return path == trigger or path.startswith(trigger + ".") or trigger.startswith(path + ".")


def triggering(res: CapturedResource, paths: list[str]) -> list[str]:
    """The paths among ``paths`` whose change replaces ``res``."""
    rule = rule_for(res.type)
    triggers = set(rule.replace_on) | set(res.replace_on_changes)
    triggers |= {path for path, (other, value) in rule.when.items() if _get(res.inputs, other) == value}
    return [p for p in paths if any(_covers(t, p) for t in triggers)]


def classify(before: Rendering, after: Rendering) -> dict[str, Change]:
    """Every resource of either rendering, by URN, with what an update from ``before`` to ``after`` does to it.

    ``after`` must have been rendered with ``prior=before`` so that ``ignoreChanges`` is already applied."""
    old = {r.urn: r for r in before.resources if r.custom}
    new = {r.urn: r for r in after.resources if r.custom}
    changes: dict[str, Change] = {}
    for urn, res in new.items():
        if urn not in old:
            changes[urn] = Change(urn, res.type, res.name, "create")
            continue
        paths = changed_paths(old[urn].inputs, res.inputs)
        triggers = triggering(res, paths)
        action: Action = "replace" if triggers else "update" if paths else "same"
        rule = rule_for(res.type)
        notes = [f"{p}: {rule.in_place[p]}" for p in paths if p in rule.in_place and not triggers]
        notes += [f"{t}: {what}" for t, what in rule.on_replace.items() if any(_covers(t, p) for p in triggers)]
        changes[urn] = Change(urn, res.type, res.name, action, paths, triggers, res.delete_before_replace, notes)
    for urn, res in old.items():
        if urn not in new:
            changes[urn] = Change(urn, res.type, res.name, "delete")
    _propagate(new, changes)
    return changes


def _propagate(new: dict[str, CapturedResource], changes: dict[str, Change]) -> None:
    """Dependent replacement: an input that refers to a replaced resource is unknown until the new one exists."""
    settled = False
    while not settled:
        settled = True
        replaced = {u for u, c in changes.items() if c.action == "replace"}
        for urn, res in new.items():
            change = changes[urn]
            if change.action in ("create", "replace"):
                continue
            for key, deps in res.property_dependencies.items():
                gone = [d for d in deps if d in replaced]
                if not gone or any(_covers(ignored, key) for ignored in res.ignore_changes):
                    # An ignored input keeps its recorded value, known or not ("cannot trigger replacements":
                    # https://www.pulumi.com/docs/iac/concepts/options/ignorechanges/, pulumi/pulumi#2657).
                    continue
                cause = f"{key} <- {changes[gone[0]].name}"
                if triggering(res, [key]):
                    change.action, change.triggers = "replace", [*change.triggers, cause]
                    change.delete_before_replace = res.delete_before_replace
                    settled = False
                    break
                if change.action == "same":
                    change.action = "update"
                if cause not in change.notes:
                    change.notes.append(f"{cause}: updated once the new resource exists")


def replaced(changes: Mapping[str, Change], type_: str | None = None) -> list[Change]:
    return [c for c in changes.values() if c.action == "replace" and (type_ is None or c.type == type_)]


def summary(changes: Mapping[str, Change]) -> list[str]:
    """One line per resource that changes, for a reviewer or a failing test."""
    lines = []
    for c in sorted(changes.values(), key=lambda x: (x.action, x.type, x.name)):
        if c.action == "same":
            continue
        detail = ", ".join(c.triggers or c.changed or c.notes)
        order = " (delete-before-replace)" if c.action == "replace" and c.delete_before_replace else ""
        lines.append(f"{c.action}{order} {c.type} {c.name}" + (f": {detail}" if detail else ""))
    return lines
