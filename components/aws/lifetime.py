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
                                    parent=exp.parent)


def create_termination_schedule(
    name: str,
    *,
    instances: list[pulumi.CustomResource],
    deadline: pulumi.Output[str],
    tags: dict,
    ctx: AwsContext,
    parent: pulumi.Resource,
) -> aws.scheduler.Schedule:
    """One schedule for every instance of an experiment (a cluster's nodes: one deadline, one stop for all)."""
    role = create_scheduler_role(name, pulumi.Output.all(*[i.arn for i in instances]), tags, ctx, parent)
    return aws.scheduler.Schedule(
        f"{name}-deadline",
        name=scoped_name(f"{name}-deadline"),
        description=f"gpulease {name}: terminate the instance at its deadline" if len(instances) == 1
        else f"gpulease {name}: terminate its {len(instances)} nodes at their deadline",
        schedule_expression=deadline.apply(at_expression),
        schedule_expression_timezone="UTC",
        flexible_time_window={"mode": "OFF"},
        action_after_completion="DELETE",
        state="ENABLED",
        target={
            "arn": rt.TERMINATE_TARGET,
            "role_arn": role.arn,
            "input": pulumi.Output.all(*[i.id for i in instances]).apply(lambda ids: json.dumps({"InstanceIds": list(ids)})),
            "retry_policy": {"maximum_event_age_in_seconds": 86400, "maximum_retry_attempts": 185},
        },
        opts=pulumi.ResourceOptions(parent=parent),
    )
