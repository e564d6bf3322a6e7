"""Who may do what: the instance's RAM role, which may read and write its own checkpoint prefix, read its own
instance's description (its deadline tag) and release (or stop in no-charge mode) its own instance, and nothing
else.

Alibaba Cloud needs no second role for the deadline: ECS releases the instance itself (see ``lifetime``). The
self-release is for the watchdog's earlier endings (idle, spot, the deadline's final sync): a pay-as-you-go
instance stopped from inside keeps billing until its release time."""

from __future__ import annotations

import json
from typing import cast

import pulumi
import pulumi_alicloud as alicloud

from components.alicloud.context import AlicloudContext
from components.image_bake import node_control_folder, node_ready_folder
from components.naming import scoped_name
from components.plan import Bucket, ExperimentParts


def assume_role_policy(service: str = "ecs.aliyuncs.com") -> str:
    return json.dumps(
        {"Version": "1", "Statement": [{"Effect": "Allow", "Principal": {"Service": [service]}, "Action": "sts:AssumeRole"}]},
        sort_keys=True,
    )


def checkpoint_access_policy(bucket_arn: str, prefix: str, rank: int | None = None) -> str:
    """Read and write under the experiment's prefix, list only that prefix, and write (only) its ready records and
    node ``rank``'s reports (``components.image_bake.node_ready_folder``, ``node_control_folder``: outside the prefix, so
    the checkpoint lifecycle never expires them); nothing else in OSS."""
    return json.dumps(
        {
            "Version": "1",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": ["oss:ListObjects"],
                    "Resource": [bucket_arn],
                    "Condition": {"StringLike": {"oss:Prefix": [prefix, f"{prefix}*"]}},
                },
                {
                    "Effect": "Allow",
                    "Action": ["oss:GetBucketInfo", "oss:GetBucketLocation"],
                    "Resource": [bucket_arn],
                },
                {
                    "Effect": "Allow",
                    "Action": ["oss:GetObject", "oss:PutObject", "oss:AbortMultipartUpload", "oss:ListParts"],
                    "Resource": [f"{bucket_arn}/{prefix}*"],
                },
                {
                    "Effect": "Allow",
                    "Action": ["oss:PutObject"],
                    "Resource": [f"{bucket_arn}/{node_ready_folder(prefix, rank)}*",
                                 f"{bucket_arn}/{node_control_folder(prefix, rank)}*"],
                },
            ],
        },
        sort_keys=True,
    )


def self_release_policy(region: str, account_id: str, instance_id: str) -> str:
    """What the instance's role may do to its own instance, and to no other:

    - ``DeleteInstance`` and ``StopInstance`` (the self-release). Both authorize on the instance resource
      ``acs:ecs:{regionId}:{accountId}:instance/{instanceId}`` (the RAM authorization tables of
      https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-deleteinstance and
      .../api-ecs-2014-05-26-stopinstance);
    - ``DescribeInstances``, to read its own deadline tag (or ``AutoReleaseTime``) where the metadata service does
      not list tags (``InstanceMetadataTags`` is "in invitational preview" on Alibaba Cloud). The narrowest read
      that returns tags: its RAM table lists the resource ``instance/{#instanceId}`` (and answers an empty list for
      instances the caller may not see: https://help.aliyun.com/document_detail/2679689.html), while
      ``ListTagResources`` authorizes on all resources only (https://help.aliyun.com/document_detail/110425.html)
      and ``DescribeInstanceAttribute``, though per instance, returns neither tags nor the release time
      (alibabacloud-ecs20140526 ``DescribeInstanceAttributeResponseBody``)."""
    instance = f"acs:ecs:{region}:{account_id}:instance/{instance_id}"
    return json.dumps(
        {
            "Version": "1",
            "Statement": [
                {"Effect": "Allow", "Action": ["ecs:DeleteInstance", "ecs:StopInstance"], "Resource": [instance]},
                {"Effect": "Allow", "Action": ["ecs:DescribeInstances"], "Resource": [instance]},
            ],
        },
        sort_keys=True,
    )


def grant(
    resource: str, policy_name: str, description: str, document: pulumi.Input[str], role: alicloud.ram.Role, *,
    tags: dict, opts: pulumi.ResourceOptions,
) -> alicloud.ram.RolePolicyAttachment:
    """A custom RAM policy and its attachment to ``role`` (``<resource>`` and ``<resource>-attachment``)."""
    policy = alicloud.ram.Policy(
        resource,
        policy_name=scoped_name(policy_name, 128),
        description=description,
        policy_document=document,
        force=True,
        tags=tags,
        opts=opts,
    )
    return alicloud.ram.RolePolicyAttachment(
        f"{resource}-attachment", role_name=role.role_name, policy_name=policy.policy_name, policy_type="Custom",
        opts=opts,
    )


def attach_instance_role(
    name: str, role: alicloud.ram.Role, instance: pulumi.CustomResource, parent: pulumi.Resource
) -> alicloud.ecs.RamRoleAttachment:
    """Give the instance the role's temporary credentials (through its metadata service)."""
    return alicloud.ecs.RamRoleAttachment(
        f"{name}-instance-role-attachment",
        instance_id=instance.id,
        ram_role_name=role.role_name,
        opts=pulumi.ResourceOptions(parent=parent),
    )


def allow_self_release(exp: ExperimentParts, role: alicloud.ram.Role, instance: pulumi.CustomResource) -> None:
    """Let the instance's role read and release that instance (and only it): the policy names the instance id,
    known once the instance exists, and is attached to the role the instance already holds."""
    region, account_id = exp.ctx.region, exp.ctx.account_id
    grant(
        f"{exp.name}-self-release", f"{exp.name}-self-release",
        f"gpulease {exp.name}: read, release or stop this instance only",
        instance.id.apply(lambda iid: self_release_policy(region, account_id, iid)), role, tags=exp.tags, opts=exp.opts(),
    )


def tools_read_policy(object_arn: str) -> str:
    return json.dumps(
        {"Version": "1", "Statement": [{"Effect": "Allow", "Action": ["oss:GetObject"], "Resource": [object_arn]}]},
        sort_keys=True,
    )


class AlicloudIdentity:
    """The identity part of the Alibaba Cloud cloud: the instance's RAM role and what it may read and write."""

    def create_identity(self, exp: ExperimentParts, bucket: Bucket | None) -> alicloud.ram.Role:
        """Every instance gets a role: its checkpoint prefix when there is a bucket, and (after it exists) the right
        to release itself (``lifetime``), since a stop from inside keeps a pay-as-you-go instance billing."""
        name, opts = exp.name, exp.opts()
        role = alicloud.ram.Role(
            f"{name}-instance-role",
            role_name=scoped_name(f"{name}-instance"),
            description=f"gpulease {name}: checkpoint prefix access, self-release",
            assume_role_policy_document=assume_role_policy(),
            max_session_duration=3600,
            force=True,
            tags=exp.tags,
            opts=opts,
        )
        if bucket is not None:
            grant(
                f"{name}-checkpoint-access", f"{name}-checkpoints", f"gpulease {name}: read and write {exp.prefix} only",
                checkpoint_access_policy(bucket.arn, exp.prefix, exp.node), role, tags=exp.tags, opts=opts,
            )
        return role

    def allow_tools_read(
        self, exp: ExperimentParts, identity: pulumi.Resource, bucket: Bucket, key: str
    ) -> alicloud.ram.RolePolicyAttachment:
        """The instance role may read the kit's tools object, and nothing else in that bucket."""
        object_arn = cast(AlicloudContext, exp.ctx).oss_arn(bucket.name, key)
        return grant(
            f"{exp.name}-tools-read", f"{exp.name}-tools-read", f"gpulease {exp.name}: read the instance-side tools",
            tools_read_policy(object_arn), cast(alicloud.ram.Role, identity), tags=exp.tags, opts=exp.opts(),
        )
