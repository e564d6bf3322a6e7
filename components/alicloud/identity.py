"""Who may do what: the instance's RAM role, which may read and write its own checkpoint prefix and nothing else.

Alibaba Cloud needs no second role for the deadline: ECS releases the instance itself (see ``lifetime``)."""

from __future__ import annotations

import json

import pulumi
import pulumi_alicloud as alicloud

from components.naming import scoped_name


def assume_role_policy(service: str = "ecs.aliyuncs.com") -> str:
    return json.dumps(
        {"Version": "1", "Statement": [{"Effect": "Allow", "Principal": {"Service": [service]}, "Action": "sts:AssumeRole"}]},
        sort_keys=True,
    )


def checkpoint_access_policy(bucket_arn: str, prefix: str) -> str:
    """Read and write under the experiment's prefix, list only that prefix; nothing else in OSS."""
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
            ],
        },
        sort_keys=True,
    )


def create_instance_role(
    name: str,
    *,
    bucket_arn: str,
    prefix: str,
    tags: dict,
    parent: pulumi.Resource,
) -> alicloud.ram.Role:
    opts = pulumi.ResourceOptions(parent=parent)
    role = alicloud.ram.Role(
        f"{name}-instance-role",
        role_name=scoped_name(f"{name}-instance"),
        description=f"gpulease {name}: checkpoint prefix access",
        assume_role_policy_document=assume_role_policy(),
        max_session_duration=3600,
        force=True,
        tags=tags,
        opts=opts,
    )
    policy = alicloud.ram.Policy(
        f"{name}-checkpoint-access",
        policy_name=scoped_name(f"{name}-checkpoints", 128),
        description=f"gpulease {name}: read and write {prefix} only",
        policy_document=checkpoint_access_policy(bucket_arn, prefix),
        force=True,
        tags=tags,
        opts=opts,
    )
    alicloud.ram.RolePolicyAttachment(
        f"{name}-checkpoint-access-attachment",
        role_name=role.role_name,
        policy_name=policy.policy_name,
        policy_type="Custom",
        opts=opts,
    )
    return role


def attach_instance_role(
    name: str, role: alicloud.ram.Role, instance: alicloud.ecs.Instance, parent: pulumi.Resource
) -> alicloud.ecs.RamRoleAttachment:
    """Give the instance the role's temporary credentials (through its metadata service)."""
    return alicloud.ecs.RamRoleAttachment(
        f"{name}-instance-role-attachment",
        instance_id=instance.id,
        ram_role_name=role.role_name,
        opts=pulumi.ResourceOptions(parent=parent),
    )
