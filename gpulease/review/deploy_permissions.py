"""What ``pulumi up`` needs the deployer to be allowed, per resource type the components register (and per lookup
they run): the table docs/permissions.md is generated from, and checked against every example stack's render.

Each type lists the actions its provider calls to create, read, update and delete it, as the services'
authorization references name them (the ``source`` of each row). A type registered by an example stack without a
row here fails ``tests/review/test_deploy_permissions.py``; so does an action of the table that the policy in
docs/permissions.md does not grant. Which read calls a provider makes on refresh is not verifiable without a
cloud (docs/permissions.md says so): the rows err on the side of the read actions, which change nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

EC2 = "https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html"
IAM = "https://docs.aws.amazon.com/service-authorization/latest/reference/list_awsidentityandaccessmanagementiam.html"
S3 = "https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3.html"
SCHEDULER = "https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazoneventbridgescheduler.html"
BUDGETS = "https://docs.aws.amazon.com/service-authorization/latest/reference/list_awsbudgetservice.html"
ECS_API = "https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-"
VPC_API = "https://www.alibabacloud.com/help/en/vpc/developer-reference/api-vpc-2016-04-28-"
RAM_API = "https://www.alibabacloud.com/help/en/ram/developer-reference/api-ram-2015-05-01-"
OSS = "https://www.alibabacloud.com/help/en/oss/user-guide/ram-policy-overview"


@dataclass(frozen=True)
class Needs:
    """The actions one resource type (or lookup) needs, and where they are named."""

    actions: tuple[str, ...]
    source: str


_TAGS_EC2 = ("ec2:CreateTags", "ec2:DeleteTags", "ec2:DescribeTags")

DEPLOY_ACTIONS: dict[str, Needs] = {
    # --- AWS ---------------------------------------------------------------------------------------------------
    "aws:ec2/instance:Instance": Needs((
        "ec2:RunInstances", "ec2:TerminateInstances", "ec2:StopInstances", "ec2:StartInstances",
        "ec2:DescribeInstances", "ec2:DescribeInstanceAttribute", "ec2:DescribeInstanceStatus",
        "ec2:DescribeSpotInstanceRequests", "ec2:DescribeInstanceTypes", "ec2:DescribeInstanceCreditSpecifications",
        "ec2:ModifyInstanceAttribute", "ec2:ModifyInstanceMetadataOptions", "ec2:DescribeVolumes",
        "ec2:DescribeNetworkInterfaces", "iam:PassRole",
        # A spot instance's delete cancels its request first (terraform-provider-aws resourceInstanceDelete).
        "ec2:CancelSpotInstanceRequests", *_TAGS_EC2), EC2),
    "aws:ec2/tag:Tag": Needs(_TAGS_EC2, EC2),
    "aws:ebs/volume:Volume": Needs((
        "ec2:CreateVolume", "ec2:DeleteVolume", "ec2:ModifyVolume", "ec2:DescribeVolumes",
        "ec2:DescribeVolumesModifications", *_TAGS_EC2), EC2),
    "aws:ec2/volumeAttachment:VolumeAttachment": Needs(("ec2:AttachVolume", "ec2:DetachVolume", "ec2:DescribeVolumes"), EC2),
    "aws:ec2/keyPair:KeyPair": Needs(("ec2:ImportKeyPair", "ec2:DeleteKeyPair", "ec2:DescribeKeyPairs", *_TAGS_EC2), EC2),
    "aws:ec2/securityGroup:SecurityGroup": Needs((
        "ec2:CreateSecurityGroup", "ec2:DeleteSecurityGroup", "ec2:DescribeSecurityGroups",
        "ec2:DescribeSecurityGroupRules", "ec2:RevokeSecurityGroupEgress", *_TAGS_EC2), EC2),
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": Needs((
        "ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress", "ec2:ModifySecurityGroupRules",
        "ec2:DescribeSecurityGroupRules", *_TAGS_EC2), EC2),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": Needs((
        "ec2:AuthorizeSecurityGroupEgress", "ec2:RevokeSecurityGroupEgress", "ec2:ModifySecurityGroupRules",
        "ec2:DescribeSecurityGroupRules", *_TAGS_EC2), EC2),
    "aws:ec2/launchTemplate:LaunchTemplate": Needs((
        "ec2:CreateLaunchTemplate", "ec2:CreateLaunchTemplateVersion", "ec2:ModifyLaunchTemplate",
        "ec2:DeleteLaunchTemplate", "ec2:DescribeLaunchTemplates", "ec2:DescribeLaunchTemplateVersions",
        "ec2:GetLaunchTemplateData", *_TAGS_EC2), EC2),
    "aws:ec2/placementGroup:PlacementGroup": Needs((
        "ec2:CreatePlacementGroup", "ec2:DeletePlacementGroup", "ec2:DescribePlacementGroups", *_TAGS_EC2), EC2),
    "aws:ec2/eip:Eip": Needs((
        "ec2:AllocateAddress", "ec2:ReleaseAddress", "ec2:AssociateAddress", "ec2:DisassociateAddress",
        "ec2:DescribeAddresses", "ec2:DescribeAddressesAttribute", *_TAGS_EC2), EC2),
    "aws:ebs/snapshot:Snapshot": Needs(("ec2:CreateSnapshot", "ec2:DeleteSnapshot", "ec2:DescribeSnapshots",
                                        *_TAGS_EC2), EC2),
    "aws:ec2/ami:Ami": Needs((
        "ec2:RegisterImage", "ec2:DeregisterImage", "ec2:DescribeImages", "ec2:DescribeImageAttribute",
        "ec2:ModifyImageAttribute", *_TAGS_EC2), EC2),
    "aws:iam/role:Role": Needs((
        "iam:CreateRole", "iam:GetRole", "iam:DeleteRole", "iam:UpdateRole", "iam:UpdateRoleDescription",
        "iam:UpdateAssumeRolePolicy", "iam:TagRole", "iam:UntagRole", "iam:ListRolePolicies",
        "iam:ListAttachedRolePolicies", "iam:ListInstanceProfilesForRole", "iam:PutRolePermissionsBoundary",
        "iam:DeleteRolePermissionsBoundary"), IAM),
    "aws:iam/rolePolicy:RolePolicy": Needs(("iam:PutRolePolicy", "iam:GetRolePolicy", "iam:DeleteRolePolicy"), IAM),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": Needs((
        "iam:AttachRolePolicy", "iam:DetachRolePolicy", "iam:ListAttachedRolePolicies"), IAM),
    "aws:iam/instanceProfile:InstanceProfile": Needs((
        "iam:CreateInstanceProfile", "iam:GetInstanceProfile", "iam:DeleteInstanceProfile",
        "iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:TagInstanceProfile",
        "iam:UntagInstanceProfile"), IAM),
    "aws:s3/bucket:Bucket": Needs((
        "s3:CreateBucket", "s3:DeleteBucket", "s3:ListBucket", "s3:ListBucketVersions", "s3:GetBucketTagging",
        "s3:PutBucketTagging", "s3:GetBucketAcl", "s3:GetBucketCORS", "s3:GetBucketWebsite", "s3:GetBucketLogging",
        "s3:GetReplicationConfiguration", "s3:GetAccelerateConfiguration", "s3:GetBucketRequestPayment",
        "s3:GetBucketObjectLockConfiguration", "s3:DeleteObject", "s3:DeleteObjectVersion"), S3),
    "aws:s3/bucketOwnershipControls:BucketOwnershipControls": Needs((
        "s3:PutBucketOwnershipControls", "s3:GetBucketOwnershipControls"), S3),
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": Needs((
        "s3:PutBucketPublicAccessBlock", "s3:GetBucketPublicAccessBlock"), S3),
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": Needs((
        "s3:PutEncryptionConfiguration", "s3:GetEncryptionConfiguration"), S3),
    "aws:s3/bucketVersioning:BucketVersioning": Needs(("s3:PutBucketVersioning", "s3:GetBucketVersioning"), S3),
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": Needs((
        "s3:PutLifecycleConfiguration", "s3:GetLifecycleConfiguration"), S3),
    "aws:s3/bucketPolicy:BucketPolicy": Needs(("s3:PutBucketPolicy", "s3:GetBucketPolicy", "s3:DeleteBucketPolicy"), S3),
    "aws:s3/bucketObjectv2:BucketObjectv2": Needs((
        "s3:PutObject", "s3:GetObject", "s3:GetObjectVersion", "s3:DeleteObject", "s3:DeleteObjectVersion",
        "s3:PutObjectTagging", "s3:GetObjectTagging", "s3:ListBucket"), S3),
    "aws:scheduler/schedule:Schedule": Needs((
        "scheduler:CreateSchedule", "scheduler:GetSchedule", "scheduler:UpdateSchedule", "scheduler:DeleteSchedule",
        "iam:PassRole"), SCHEDULER),
    "aws:budgets/budget:Budget": Needs((
        "budgets:ModifyBudget", "budgets:ViewBudget", "budgets:TagResource", "budgets:UntagResource",
        "budgets:ListTagsForResource"), BUDGETS),
    "pulumi:providers:aws": Needs((), "a provider resource calls no API of its own"),
    "time:index/static:Static": Needs((), "the pulumiverse time provider calls no cloud"),
    # --- Alibaba Cloud -----------------------------------------------------------------------------------------
    "alicloud:ecs/instance:Instance": Needs((
        "ecs:RunInstances", "ecs:StartInstance", "ecs:StopInstance", "ecs:RebootInstance", "ecs:DeleteInstance",
        "ecs:DescribeInstances", "ecs:DescribeInstanceAttribute", "ecs:DescribeUserData",
        "ecs:ModifyInstanceAttribute", "ecs:ModifyInstanceAutoReleaseTime", "ecs:ModifyInstanceMetadataOptions",
        "ecs:ModifyInstanceSpec", "ecs:ModifyInstanceDeployment", "ecs:TagResources", "ecs:UntagResources",
        "ecs:ListTagResources"), ECS_API + "runinstances"),
    "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet": Needs((
        "ecs:CreateDeploymentSet", "ecs:DeleteDeploymentSet", "ecs:DescribeDeploymentSets",
        "ecs:ModifyDeploymentSetAttribute"), ECS_API + "createdeploymentset"),
    "alicloud:ecs/ecsDisk:EcsDisk": Needs((
        "ecs:CreateDisk", "ecs:DeleteDisk", "ecs:ResizeDisk", "ecs:ModifyDiskAttribute", "ecs:ModifyDiskSpec",
        "ecs:DescribeDisks", "ecs:TagResources", "ecs:UntagResources"), ECS_API + "createdisk"),
    "alicloud:ecs/ecsDiskAttachment:EcsDiskAttachment": Needs(("ecs:AttachDisk", "ecs:DetachDisk", "ecs:DescribeDisks"),
                                                             ECS_API + "attachdisk"),
    "alicloud:ecs/ecsKeyPair:EcsKeyPair": Needs(("ecs:ImportKeyPair", "ecs:DeleteKeyPairs", "ecs:DescribeKeyPairs"),
                                               ECS_API + "importkeypair"),
    "alicloud:ecs/securityGroup:SecurityGroup": Needs((
        "ecs:CreateSecurityGroup", "ecs:DeleteSecurityGroup", "ecs:ModifySecurityGroupAttribute",
        "ecs:ModifySecurityGroupPolicy", "ecs:DescribeSecurityGroups", "ecs:DescribeSecurityGroupAttribute"),
        ECS_API + "createsecuritygroup"),
    "alicloud:ecs/securityGroupRule:SecurityGroupRule": Needs((
        "ecs:AuthorizeSecurityGroup", "ecs:AuthorizeSecurityGroupEgress", "ecs:RevokeSecurityGroup",
        "ecs:RevokeSecurityGroupEgress", "ecs:ModifySecurityGroupRule", "ecs:DescribeSecurityGroupAttribute"),
        ECS_API + "authorizesecuritygroup"),
    "alicloud:ecs/ramRoleAttachment:RamRoleAttachment": Needs((
        "ecs:AttachInstanceRamRole", "ecs:DetachInstanceRamRole", "ecs:DescribeInstanceRamRole", "ram:PassRole"),
        "https://help.aliyun.com/document_detail/54244.html"),
    "alicloud:ecs/ecsSnapshot:EcsSnapshot": Needs((
        "ecs:CreateSnapshot", "ecs:DeleteSnapshot", "ecs:DescribeSnapshots", "ecs:ModifySnapshotAttribute",
        "ecs:TagResources", "ecs:UntagResources"), ECS_API + "createsnapshot"),
    "alicloud:ecs/image:Image": Needs((
        "ecs:CreateImage", "ecs:DeleteImage", "ecs:DescribeImages", "ecs:ModifyImageAttribute",
        "ecs:TagResources", "ecs:UntagResources"), ECS_API + "createimage"),
    "alicloud:vpc/network:Network": Needs((
        "vpc:CreateVpc", "vpc:DeleteVpc", "vpc:ModifyVpcAttribute", "vpc:DescribeVpcs", "vpc:DescribeVpcAttribute",
        "vpc:TagResources", "vpc:UnTagResources", "vpc:ListTagResources"), VPC_API + "createvpc"),
    "alicloud:vpc/switch:Switch": Needs((
        "vpc:CreateVSwitch", "vpc:DeleteVSwitch", "vpc:ModifyVSwitchAttribute", "vpc:DescribeVSwitches",
        "vpc:DescribeVSwitchAttributes", "vpc:TagResources", "vpc:UnTagResources"), VPC_API + "createvswitch"),
    "alicloud:oss/bucket:Bucket": Needs((
        "oss:PutBucket", "oss:DeleteBucket", "oss:GetBucketInfo", "oss:PutBucketVersioning",
        "oss:PutBucketEncryption", "oss:DeleteBucketEncryption", "oss:PutBucketLifecycle",
        "oss:DeleteBucketLifecycle", "oss:PutBucketTagging", "oss:DeleteBucketTagging", "oss:ListObjects",
        "oss:ListObjectVersions", "oss:DeleteObject", "oss:DeleteObjectVersion"), OSS),
    "alicloud:oss/bucketAcl:BucketAcl": Needs(("oss:PutBucketAcl", "oss:GetBucketAcl"), OSS),
    "alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock": Needs((
        "oss:PutBucketPublicAccessBlock", "oss:GetBucketPublicAccessBlock", "oss:DeleteBucketPublicAccessBlock"), OSS),
    "alicloud:oss/bucketPolicy:BucketPolicy": Needs(("oss:PutBucketPolicy", "oss:GetBucketPolicy",
                                                      "oss:DeleteBucketPolicy"), OSS),
    "alicloud:oss/bucketObject:BucketObject": Needs((
        "oss:PutObject", "oss:PutObjectAcl", "oss:GetObject", "oss:DeleteObject", "oss:ListObjects"), OSS),
    "alicloud:ram/role:Role": Needs((
        "ram:CreateRole", "ram:GetRole", "ram:UpdateRole", "ram:DeleteRole", "ram:ListPoliciesForRole",
        "ram:TagResources", "ram:UntagResources", "ram:ListTagResources"), RAM_API + "createrole"),
    "alicloud:ram/policy:Policy": Needs((
        "ram:CreatePolicy", "ram:GetPolicy", "ram:GetPolicyVersion", "ram:ListPolicyVersions",
        "ram:CreatePolicyVersion", "ram:DeletePolicyVersion", "ram:DeletePolicy", "ram:ListEntitiesForPolicy"),
        RAM_API + "createpolicy"),
    "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment": Needs((
        "ram:AttachPolicyToRole", "ram:DetachPolicyFromRole", "ram:ListPoliciesForRole"),
        RAM_API + "attachpolicytorole"),
    "pulumi:providers:alicloud": Needs((), "a provider resource calls no API of its own"),
}


def actions_for(types: set[str]) -> dict[str, tuple[str, ...]]:
    """The actions of each of ``types`` (a ``KeyError`` names a type with no row)."""
    return {t: DEPLOY_ACTIONS[t].actions for t in sorted(types)}


def permissions_table(cloud: str) -> str:
    """docs/permissions.md's table for ``cloud`` (``aws``: the aws: types; ``alicloud``: the alicloud: ones)."""
    rows = ["| resource type | actions | source |", "| --- | --- | --- |"]
    for type_, needs in DEPLOY_ACTIONS.items():
        if not (type_.startswith(f"{cloud}:") or type_ == f"pulumi:providers:{cloud}"
                or (cloud == "aws" and type_.startswith("time:"))):
            continue
        actions = ", ".join(f"`{a}`" for a in needs.actions) or "none"
        source = f"[reference]({needs.source})" if needs.source.startswith("https://") else needs.source
        rows.append(f"| `{type_}` | {actions} | {source} |")
    return "\n".join(rows)
