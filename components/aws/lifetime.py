"""The hard deadline outside the instance: an EventBridge Scheduler one-time schedule terminates it.

The schedule fires once at the deadline (flexible window off), calls EC2 TerminateInstances for exactly this
instance through a role that may do nothing else, and deletes itself afterwards. The watchdog inside the
instance shuts it down at the same moment after a last checkpoint sync; this schedule is the backstop that
works even when the instance is wedged.

With spot recovery (a persistent request) terminating is not enough: "If you terminate a running or stopped Spot
Instance that was launched by a persistent Spot request, the Spot request transitions to the open state so that a
new Spot Instance can be launched" ("Terminate a Spot Instance",
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/using-spot-instances-request.html#terminating-a-spot-instance).
So a second schedule, one API call each, cancels the request ``CANCEL_LEAD`` before the termination (cancelling
does not stop a running instance: CancelSpotInstanceRequests,
https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CancelSpotInstanceRequests.html), through the same
role, allowed that one request more. The request also carries the experiment's tags, which RunInstances does not
give it here, so that ``gpulease ls`` and ``reap`` judge it by its own tags.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import cast

import pulumi
import pulumi_aws as aws

from components.aws.context import AwsContext
from components.aws.identity import allow_own_spot_cancel, create_scheduler_role
from components.aws.spec import recovers
from components.naming import scoped_name
from components.plan import ExperimentParts
from gpulease.core import resources as rt
from gpulease.core import vocabulary as v

CANCEL_LEAD = timedelta(minutes=2)
"""How long before the termination the persistent request is cancelled: termination must never come first (it
re-opens the request), and the schedule's retries get this long before it does."""
REQUEST_TAGS = (v.TAG_MANAGED_BY, v.TAG_STACK, v.TAG_EXPERIMENT, v.TAG_EXPIRES_AT)
"""The instance's tags the spot request carries too (what ``gpulease ls`` and ``reap`` judge it by, and the
experiment, by which ``gpulease up`` cancels only the requests of the runs it parks)."""
RETRY_POLICY = {"maximum_event_age_in_seconds": 86400, "maximum_retry_attempts": 185}


def at_expression(deadline_rfc3339: str, lead: timedelta = timedelta(0)) -> str:
    """EventBridge Scheduler's one-time form: ``at(yyyy-mm-ddThh:mm:ss)``, read in the schedule's timezone (UTC),
    ``lead`` before the deadline."""
    return f"at({(v.parse_rfc3339(deadline_rfc3339) - lead).strftime('%Y-%m-%dT%H:%M:%S')})"


class AwsLifetime:
    """The deadline part of the AWS cloud: the one-time schedule that terminates the instance; with spot recovery
    the one that cancels its persistent request first, the request's tags and the watchdog's right to cancel it."""

    def after_instance(self, exp: ExperimentParts, instance: pulumi.CustomResource, identity: pulumi.Resource) -> None:
        requests = None
        if recovers(exp.spec):
            # A spot instance always has its request's id once it runs (unknown during a preview, when this is not
            # called); an empty one would make the cancel name nothing (``[""]``) and the ARNs end in ``/``.
            request = cast(aws.ec2.Instance, instance).spot_instance_request_id.apply(
                lambda rid: own_request_id(exp.name, rid))
            tag_spot_request(exp, request)
            allow_own_spot_cancel(exp.name, identity, request, exp.ctx, exp.opts())
            requests = [request]
        create_termination_schedule(exp.name, instances=[instance], deadline=exp.deadline, tags=exp.tags, ctx=exp.ctx,
                                    parent=exp.parent, boundary=exp.spec.iam.permissions_boundary,
                                    spot_requests=requests)


def own_request_id(name: str, rid: str | None) -> str:
    """The instance's spot request id, or the deployment fails with one line: without it nothing could cancel the
    persistent request, which would then relaunch what the deadline terminates."""
    if not rid:
        raise pulumi.RunError(
            f"experiment {name!r}: the spot instance came back without its spot request id (spot_instance_request_id "
            "is empty): the deadline could not cancel its persistent request. Run `gpulease down`, then check "
            "`gpulease ls` for an open spot request.")
    return rid


def tag_spot_request(exp: ExperimentParts, request: pulumi.Output[str]) -> list[aws.ec2.Tag]:
    """The request's own tags, the instance's values (``aws.ec2.Tag`` per key: the instance resource tags only the
    instance and its volumes, ``resourceInstanceCreate`` in terraform-provider-aws). Kept on the request when the
    stack deletes them (``retain_on_delete``): a request a replacement or a destroy left open still says whose it is
    and when it ends, for ``gpulease down``'s check, ``ls`` and ``reap``."""
    return [
        aws.ec2.Tag(f"{exp.name}-spot-request-{key.removeprefix(v.TAG_PREFIX)}", resource_id=request, key=key,
                    value=exp.tags[key], opts=exp.opts(retain_on_delete=True))
        for key in REQUEST_TAGS if key in exp.tags
    ]


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
    spot_requests: list[pulumi.Output[str]] | None = None,
) -> list[aws.scheduler.Schedule]:
    """The deadline of an experiment's instances: one role allowed to terminate exactly them, and one schedule per
    instance, each calling TerminateInstances with that one id.

    Never one call with every id: "If you specify multiple instances and the request fails (for example, because
    of a single incorrect instance ID), none of the instances are terminated" (TerminateInstances,
    https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_TerminateInstances.html), so a cluster node
    reclaimed or released hours earlier would keep every other node running. ``node_names`` names each schedule
    after its node (a cluster); a single instance's schedule is ``<name>-deadline`` as always. ``spot_requests``
    (one per instance, spot recovery) adds a ``<name>-spot-cancel`` schedule per request, ``CANCEL_LEAD`` earlier."""
    requests = pulumi.Output.all(*spot_requests) if spot_requests is not None else None
    role = create_scheduler_role(name, pulumi.Output.all(*[i.arn for i in instances]), tags, ctx, parent, boundary,
                                 request_ids=requests)
    names = node_names or [name]
    for resource, request in zip(names, spot_requests, strict=True) if spot_requests is not None else ():
        aws.scheduler.Schedule(
            f"{resource}-spot-cancel",
            name=scoped_name(f"{resource}-spot-cancel"),
            description=f"gpulease {resource}: cancel the spot request before the deadline terminates its instance",
            schedule_expression=deadline.apply(lambda d: at_expression(d, CANCEL_LEAD)),
            schedule_expression_timezone="UTC",
            flexible_time_window={"mode": "OFF"},
            action_after_completion="DELETE",
            state="ENABLED",
            target={
                "arn": rt.CANCEL_SPOT_TARGET,
                "role_arn": role.arn,
                "input": request.apply(lambda rid: json.dumps({"SpotInstanceRequestIds": [rid]})),
                "retry_policy": RETRY_POLICY,
            },
            opts=pulumi.ResourceOptions(parent=parent),
        )
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
                "retry_policy": RETRY_POLICY,
            },
            opts=pulumi.ResourceOptions(parent=parent),
        )
        for resource, instance in zip(names, instances, strict=True)
    ]
