"""max-runtime: no GPU instance without a deadline, and no deadline without a cloud-side stop.

``max-runtime`` (resource, mandatory): every GPU instance carries an expires-at tag no later than
now + ``maxHours``; on Alibaba Cloud its ``autoReleaseTime`` is set and no later than expires-at.

``max-runtime-cloud-stop`` (stack, mandatory): every GPU instance has a stop the cloud carries out even when the
instance is wedged. AWS: an EventBridge Scheduler schedule in the stack whose target is
``aws-sdk:ec2:terminateInstances`` for that instance, firing no later than its expires-at. The instance id
is not known during ``pulumi preview`` (the schedule's input is then unknown), so a schedule covers an instance
when its ``target`` depends on the instance (the engine's property dependencies), when its known input names
the instance's id, or, with the input unknown, when the stack holds exactly one GPU instance and one such
schedule. Alibaba Cloud: ``autoReleaseTime`` on the instance.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from pulumi_policy import (
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from gpulease.core import resources as rt
from gpulease.core import vocabulary as v

from . import common as c

GPU_INSTANCE_TYPES = (rt.AWS_INSTANCE, rt.AWS_SPOT_REQUEST, rt.ALI_INSTANCE)


def _max_runtime(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in GPU_INSTANCE_TYPES or not c.is_gpu(args.props):
        return
    config = args.get_config()
    max_hours = float(c.config_value(config, "maxHours", v.DEFAULT_POLICY_MAX_HOURS))
    grace = timedelta(minutes=float(c.config_value(config, "stopGraceMinutes", 5)))
    what = c.display(args.resource_type, args.name)
    raw = c.tags_of(args.props, args.provider).get(v.TAG_EXPIRES_AT)
    if raw is c.UNKNOWN:
        return
    now = c.now()  # one reading, so the limit and the reported distance agree
    if raw is None:
        report(f"{what} ({c.known(args.props, 'instanceType')}) has no {v.TAG_EXPIRES_AT} tag; accepted: an RFC 3339 "
               f"UTC deadline no later than now + {max_hours:g} h, e.g. {v.rfc3339(now + timedelta(hours=8))}")
        return
    expires = c.parse_time(raw)
    if expires is None:
        report(f"{what}: {v.TAG_EXPIRES_AT}={raw!r} is not an RFC 3339 timestamp with a UTC offset")
        return
    limit = now + timedelta(hours=max_hours)
    if expires > limit:
        hours = (expires - now).total_seconds() / 3600
        report(f"{what}: {v.TAG_EXPIRES_AT}={raw} is {hours:.0f} h away, more than the {max_hours:g} h allowed "
               f"(latest accepted: {v.rfc3339(limit)})")
    if args.resource_type == rt.ALI_INSTANCE:
        release = c.known(args.props, "autoReleaseTime")
        if release is c.UNKNOWN or release is None:
            return  # a missing release time is max-runtime-cloud-stop's finding
        released = c.parse_time(release)
        if released is None:
            report(f"{what}: autoReleaseTime={release!r} is not an RFC 3339 UTC time")
        elif released > expires + grace:
            report(f"{what}: autoReleaseTime={release} is later than {v.TAG_EXPIRES_AT}={raw}")


max_runtime = c.judges(ResourceValidationPolicy(
    name="max-runtime",
    description="Every GPU instance has an expires-at deadline within the allowed runtime.",
    validate=_max_runtime,
    enforcement_level=c.level("mandatory"),
    config_schema=c.schema(
        {
            "maxHours": {"type": "number", "exclusiveMinimum": 0, "default": v.DEFAULT_POLICY_MAX_HOURS,
                         "description": "Longest allowed time from now to a GPU instance's expires-at."},
            "stopGraceMinutes": {"type": "number", "minimum": 0, "default": 5,
                                 "description": "How much later than expires-at a cloud-side stop may fire."},
        }
    ),
), GPU_INSTANCE_TYPES)


# --- the stack-level check: a cloud-side stop for every GPU instance -------------------------------------


def _schedule_fire_time(props: Any) -> tuple[Any, str | None]:
    """The latest moment a one-time schedule fires (its at() plus any flexible window), or why it cannot."""
    expression = c.known(props, "scheduleExpression")
    if expression is c.UNKNOWN:
        return c.UNKNOWN, None
    match = re.match(r"^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$", str(expression or ""))
    if not match:
        return None, f"scheduleExpression {expression!r} is not a one-time at(...) expression"
    zone = c.known(props, "scheduleExpressionTimezone", default="UTC")
    try:
        tz = ZoneInfo(zone if isinstance(zone, str) else "UTC")
    except (KeyError, ValueError):
        return None, f"scheduleExpressionTimezone {zone!r} is not a time zone"
    moment = datetime.fromisoformat(match.group(1)).replace(tzinfo=tz)
    if c.known(props, "flexibleTimeWindow", "mode") == "FLEXIBLE":
        window = rt.number(c.known(props, "flexibleTimeWindow", "maximumWindowInMinutes")) or 0
        moment += timedelta(minutes=window)
    return moment, None


def _schedule_instance_ids(props: Any) -> list[str] | None:
    raw = c.known(props, "target", "input")
    if not isinstance(raw, str):
        return None
    try:
        ids = json.loads(raw).get("InstanceIds")
    except (ValueError, AttributeError):
        return None
    return [str(i) for i in ids] if isinstance(ids, list) else None


def _cloud_stop(args: StackValidationArgs, report: ReportViolation) -> None:
    config = args.get_config()
    grace = timedelta(minutes=float(c.config_value(config, "stopGraceMinutes", 5)))
    gpus = [r for r in args.resources if r.resource_type in GPU_INSTANCE_TYPES and c.is_gpu(r.props)]
    schedules = [
        r
        for r in args.resources
        if r.resource_type == rt.AWS_SCHEDULE
        and c.known(r.props, "target", "arn") == rt.TERMINATE_TARGET
        and c.known(r.props, "state", default="ENABLED") != "DISABLED"
    ]
    aws_gpus = [r for r in gpus if r.resource_type != rt.ALI_INSTANCE]
    # Which instances each schedule terminates: by the target's dependencies, or by the ids in its known input.
    by_urn: dict[str, list] = {}
    by_id: dict[str, list] = {}
    unmatched = []
    for sched in schedules:
        target_deps = {d.urn for d in sched.property_dependencies.get("target", [])}
        ids = _schedule_instance_ids(sched.props)
        for urn in target_deps:
            by_urn.setdefault(urn, []).append(sched)
        for instance_id in ids or []:
            by_id.setdefault(instance_id, []).append(sched)
        if ids is None and not target_deps:
            unmatched.append(sched)
    for inst in gpus:
        what = c.display(inst.resource_type, inst.name)
        expires = c.parse_time(c.tags_of(inst.props, inst.provider).get(v.TAG_EXPIRES_AT))
        if inst.resource_type == rt.ALI_INSTANCE:
            release = c.known(inst.props, "autoReleaseTime")
            if release is None:
                report(f"{what} has no autoReleaseTime: nothing outside the instance releases it at its deadline; "
                       "accepted: auto_release_time no later than its expires-at tag", inst.urn)
            continue
        instance_id = c.known(inst.props, "id")
        covering = list(by_urn.get(inst.urn, []))
        if isinstance(instance_id, str):
            covering += [s for s in by_id.get(instance_id, []) if s not in covering]
        if not covering and len(schedules) == 1 and len(aws_gpus) == 1 and unmatched:
            covering = unmatched  # input unknown during preview and no dependency: one schedule, one instance
        if not covering:
            report(f"{what} has no EventBridge Scheduler schedule terminating it "
                   f"(target {rt.TERMINATE_TARGET}); accepted: a one-time at(...) schedule no later than its "
                   f"{v.TAG_EXPIRES_AT} tag", inst.urn)
            continue
        late = []
        for sched in covering:
            fires, problem = _schedule_fire_time(sched.props)
            if problem:
                late.append(f"{sched.name}: {problem}")
            elif fires is not c.UNKNOWN and fires is not None and expires is not None and fires > expires + grace:
                late.append(f"{sched.name} fires at {v.rfc3339(fires)}, after {v.TAG_EXPIRES_AT}={v.rfc3339(expires)}")
        if late and len(late) == len(covering):
            report(f"{what}: no terminating schedule fires by its deadline ({'; '.join(late)})", inst.urn)


max_runtime_cloud_stop = c.judges(StackValidationPolicy(
    name="max-runtime-cloud-stop",
    description="Every GPU instance has a cloud-side stop at its deadline (AWS scheduler schedule, Alibaba "
    "auto_release_time).",
    validate=_cloud_stop,
    enforcement_level=c.level("mandatory"),
    config_schema=c.schema(
        {
            "stopGraceMinutes": {"type": "number", "minimum": 0, "default": 5,
                                 "description": "How much later than expires-at the stop may fire."},
        }
    ),
), (*GPU_INSTANCE_TYPES, rt.AWS_SCHEDULE))

POLICIES = [max_runtime, max_runtime_cloud_stop]
