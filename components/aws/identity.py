"""Who may do what: the instance role (its bucket prefix only; with spot recovery, cancelling its own spot request)
and the scheduler's role (terminate one instance; with spot recovery, cancel its spot request)."""

from __future__ import annotations

import json
from typing import cast

import pulumi
import pulumi_aws as aws

from components.aws.context import AwsContext
from components.image_bake import node_control_folder, node_ready_folder
from components.naming import scoped_name
from components.plan import Bucket, ExperimentParts

SSM_MANAGED_POLICY = "policy/AmazonSSMManagedInstanceCore"


def assume_role_policy(service: str, source_account: str | None = None) -> str:
    statement: dict = {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}
    if source_account:
        # Confused-deputy guard: only schedules in this account may use the role.
        statement["Condition"] = {"StringEquals": {"aws:SourceAccount": source_account}}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]}, sort_keys=True)


def checkpoint_access_policy(bucket_arn: str, prefix: str, rank: int | None = None) -> str:
    """Read and write under the experiment's prefix, list only that prefix, and write (only) its ready records and
    node ``rank``'s reports (``components.image_bake.node_ready_folder``, ``node_control_folder``: outside the prefix, so
    the checkpoint lifecycle never expires them); nothing else in S3."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "ListCheckpointPrefix",
                    "Effect": "Allow",
                    "Action": "s3:ListBucket",
                    "Resource": bucket_arn,
                    "Condition": {"StringLike": {"s3:prefix": [prefix, f"{prefix}*"]}},
                },
                {
                    "Sid": "LocateBucket",
                    "Effect": "Allow",
                    "Action": "s3:GetBucketLocation",
                    "Resource": bucket_arn,
                },
                {
                    "Sid": "ReadWriteCheckpoints",
                    "Effect": "Allow",
                    "Action": [
                        "s3:GetObject",
                        "s3:PutObject",
                        "s3:AbortMultipartUpload",
                        "s3:ListMultipartUploadParts",
                    ],
                    "Resource": f"{bucket_arn}/{prefix}*",
                },
                {
                    "Sid": "WriteReadyRecords",
                    "Effect": "Allow",
                    "Action": "s3:PutObject",
                    "Resource": f"{bucket_arn}/{node_ready_folder(prefix, rank)}*",
                },
                {
                    "Sid": "WriteControlRecords",
                    "Effect": "Allow",
                    "Action": "s3:PutObject",
                    "Resource": f"{bucket_arn}/{node_control_folder(prefix, rank)}*",
                },
            ],
        },
        sort_keys=True,
    )


def tools_read_policy(bucket_arn: str, key: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Sid": "ReadGpuleaseTools", "Effect": "Allow", "Action": "s3:GetObject",
                           "Resource": f"{bucket_arn}/{key}"}],
        },
        sort_keys=True,
    )


class AwsIdentity:
    """The identity part of the AWS cloud: the instance profile and what its role may read and write."""

    def create_identity(self, exp: ExperimentParts, bucket: Bucket | None) -> aws.iam.InstanceProfile:
        """The instance role (its checkpoint prefix only; SSM core in ssm mode) and its instance profile."""
        name, opts = exp.name, exp.opts()
        ssm = exp.spec.ssh.mode == "ssm"
        role = aws.iam.Role(
            f"{name}-instance-role",
            name=scoped_name(f"{name}-instance"),
            description=f"gpulease {name}: checkpoint prefix access" + (" and SSM sessions" if ssm else ""),
            assume_role_policy=assume_role_policy("ec2.amazonaws.com"),
            permissions_boundary=exp.spec.iam.permissions_boundary,
            tags=exp.tags,
            opts=opts,
        )
        if bucket is not None:
            aws.iam.RolePolicy(
                f"{name}-checkpoint-access",
                role=role.id,
                policy=checkpoint_access_policy(bucket.arn, exp.prefix, exp.node),
                opts=opts,
            )
        if ssm:
            aws.iam.RolePolicyAttachment(
                f"{name}-ssm-core",
                role=role.name,
                policy_arn=f"arn:{exp.ctx.partition}:iam::aws:{SSM_MANAGED_POLICY}",
                opts=opts,
            )
        return aws.iam.InstanceProfile(
            f"{name}-instance-profile",
            name=scoped_name(f"{name}-instance"),
            role=role.name,
            tags=exp.tags,
            opts=opts,
        )

    def allow_tools_read(
        self, exp: ExperimentParts, identity: pulumi.Resource, bucket: Bucket, key: str
    ) -> aws.iam.RolePolicy:
        """The instance role may read that one object, nothing else in the bucket."""
        profile = cast(aws.iam.InstanceProfile, identity)
        return aws.iam.RolePolicy(
            f"{exp.name}-tools-read", role=profile.role, policy=tools_read_policy(bucket.arn, key), opts=exp.opts()
        )


def _one_or_list(arns: list[str]) -> str | list[str]:
    """One ARN as a string (as before clusters), several as a list."""
    return arns[0] if len(arns) == 1 else list(arns)


def spot_request_arn(ctx: AwsContext, request_id: str) -> str:
    """A spot request's ARN, the resource CancelSpotInstanceRequests authorizes on (Service Authorization Reference,
    Amazon EC2: resource type spot-instances-request,
    https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html)."""
    return f"arn:{ctx.partition}:ec2:{ctx.region}:{ctx.account_id}:spot-instances-request/{request_id}"


def terminate_only_policy(instance_arns: list[str], request_arns: list[str] | None = None) -> str:
    """Terminate exactly these instances; with persistent spot requests, cancel exactly those requests too."""
    statements: list[dict] = [
        {"Sid": "TerminateThisInstance", "Effect": "Allow", "Action": "ec2:TerminateInstances",
         "Resource": _one_or_list(instance_arns)},
    ]
    if request_arns:
        statements.append({"Sid": "CancelThisSpotRequest", "Effect": "Allow", "Action": "ec2:CancelSpotInstanceRequests",
                           "Resource": _one_or_list(request_arns)})
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, sort_keys=True)


def own_spot_request_policy(request_arn: str) -> str:
    """What the watchdog needs to end its own persistent request before it shuts down: find the request's id, and at
    the deadline after a cancel that failed read whether the stack's schedule has cancelled it (DescribeInstances
    and DescribeSpotInstanceRequests have no resource-level permissions, hence ``*``: Service Authorization
    Reference, Amazon EC2), and cancel exactly that request."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {"Sid": "CancelOwnSpotRequest", "Effect": "Allow", "Action": "ec2:CancelSpotInstanceRequests",
                 "Resource": request_arn},
                {"Sid": "FindOwnSpotRequest", "Effect": "Allow",
                 "Action": ["ec2:DescribeInstances", "ec2:DescribeSpotInstanceRequests"], "Resource": "*"},
            ],
        },
        sort_keys=True,
    )


def allow_own_spot_cancel(name: str, identity: pulumi.Resource, request_id: pulumi.Output[str], ctx: AwsContext,
                          opts: pulumi.ResourceOptions) -> aws.iam.RolePolicy:
    """The instance role may cancel its own spot request: a policy created after the instance (the request's id is
    only known once it runs)."""
    profile = cast(aws.iam.InstanceProfile, identity)
    return aws.iam.RolePolicy(
        f"{name}-cancel-own-spot-request", role=profile.role,
        policy=request_id.apply(lambda rid: own_spot_request_policy(spot_request_arn(ctx, rid))), opts=opts,
    )


def create_scheduler_role(
    name: str, instance_arns: pulumi.Output[list[str]], tags: dict, ctx: AwsContext, parent: pulumi.Resource,
    boundary: str | None = None, request_ids: pulumi.Output[list[str]] | None = None,
) -> aws.iam.Role:
    opts = pulumi.ResourceOptions(parent=parent)
    what = "terminate this one instance" + (" and cancel its spot request" if request_ids is not None else "")
    role = aws.iam.Role(
        f"{name}-deadline-role",
        name=scoped_name(f"{name}-deadline"),
        description=f"gpulease {name}: EventBridge Scheduler may {what}",
        assume_role_policy=assume_role_policy("scheduler.amazonaws.com", ctx.account_id),
        permissions_boundary=boundary,
        tags=tags,
        opts=opts,
    )
    if request_ids is None:
        policy = instance_arns.apply(terminate_only_policy)
    else:
        policy = pulumi.Output.all(instance_arns, request_ids).apply(
            lambda both: terminate_only_policy(both[0], [spot_request_arn(ctx, rid) for rid in both[1]]))
    aws.iam.RolePolicy(f"{name}-deadline-terminate", role=role.id, policy=policy, opts=opts)
    return role
