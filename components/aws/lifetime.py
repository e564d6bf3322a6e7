"""The hard deadline outside the instance: an EventBridge Scheduler one-time schedule terminates it.

The schedule fires once at the deadline (flexible window off), calls EC2 TerminateInstances for exactly this
instance through a role that may do nothing else, and deletes itself afterwards. The watchdog inside the
instance shuts it down at the same moment after a last checkpoint sync; this schedule is the backstop that
works even when the instance is wedged.
"""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

from components.aws.context import AwsContext
from components.aws.identity import create_scheduler_role
from components.naming import scoped_name
from components.plan import ExperimentParts
from gpulease.core import resources as rt
from gpulease.core import vocabulary as v


def at_expression(deadline_rfc3339: str) -> str:
    """EventBridge Scheduler's one-time form: ``at(yyyy-mm-ddThh:mm:ss)``, read in the schedule's timezone (UTC)."""
    return f"at({v.parse_rfc3339(deadline_rfc3339).strftime('%Y-%m-%dT%H:%M:%S')})"


class AwsLifetime:
    """The deadline part of the AWS cloud: the one-time schedule that terminates the instance."""

    def after_instance(self, exp: ExperimentParts, instance: pulumi.CustomResource, identity: pulumi.Resource) -> None:
        create_termination_schedule(exp.name, instances=[instance], deadline=exp.deadline, tags=exp.tags, ctx=exp.ctx,
                                    parent=exp.parent, boundary=exp.spec.iam.permissions_boundary)


def create_termination_schedule(
    name: str,
    *,
    instances: list[pulumi.CustomResource],
    deadline: pulumi.Output[str],
    tags: dict,
    ctx: AwsContext,
    parent: pulumi.Resource,
    node_names: list[str] | None = None,
    boundary: str | None = None,
) -> list[aws.scheduler.Schedule]:
    """The deadline of an experiment's instances: one role allowed to terminate exactly them, and one schedule per
    instance, each calling TerminateInstances with that one id.

    Never one call with every id: "If you specify multiple instances and the request fails (for example, because
    of a single incorrect instance ID), none of the instances are terminated" (TerminateInstances,
    https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_TerminateInstances.html), so a cluster node
    reclaimed or released hours earlier would keep every other node running. ``node_names`` names each schedule
    after its node (a cluster); a single instance's schedule is ``<name>-deadline`` as always."""
    role = create_scheduler_role(name, pulumi.Output.all(*[i.arn for i in instances]), tags, ctx, parent, boundary)
    names = node_names or [name]
    return [
        aws.scheduler.Schedule(
            f"{resource}-deadline",
            name=scoped_name(f"{resource}-deadline"),
            description=f"gpulease {resource}: terminate the instance at its deadline",
            schedule_expression=deadline.apply(at_expression),
            schedule_expression_timezone="UTC",
            flexible_time_window={"mode": "OFF"},
            action_after_completion="DELETE",
            state="ENABLED",
            target={
                "arn": rt.TERMINATE_TARGET,
                "role_arn": role.arn,
                "input": instance.id.apply(lambda iid: json.dumps({"InstanceIds": [iid]})),
                "retry_policy": {"maximum_event_age_in_seconds": 86400, "maximum_retry_attempts": 185},
            },
            opts=pulumi.ResourceOptions(parent=parent),
        )
        for resource, instance in zip(names, instances, strict=True)
    ]
