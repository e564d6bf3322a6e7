"""max-runtime: no GPU without a deadline, and no deadline without a cloud-side stop, whatever form runs it.

Both rules judge every *compute unit* of the stack that may run a GPU or other accelerator: an EC2 instance, a
spot request, an autoscaling group, an EC2 / spot fleet, an EKS node group, an ECS instance or instance set, an
ESS scaling group, an ACK node pool (``gpulease.core.compute``: each form with the launch templates, launch
configurations or scaling configurations it launches from).

``max-runtime`` (stack, mandatory): each such unit carries an expires-at tag (its own, or its template's instance
tags) no later than now + ``maxHours``; an Alibaba release time is no later than that tag.

``max-runtime-cloud-stop`` (stack, mandatory): each has a stop the cloud carries out even when the instances are
wedged, the one its form offers (``gpulease.core.compute`` registry, ``deadlines``): an EventBridge Scheduler
schedule terminating an instance, a scheduled action scaling an autoscaling group to zero, a fleet's expiry
with termination, an Alibaba release time, an ESS scheduled task to zero. A form that offers none (an ACK node
pool) is reported as unbounded, naming what would bound it; so is a setting that defeats the stop (scale-in
protection, a persistent spot request). A persistent spot request is accepted with a cloud-side end of its own: a
``valid_until`` no later than the deadline, or a schedule cancelling exactly that request
(``ec2:cancelSpotInstanceRequests``, its input exactly that request's id) by the deadline and at least 60 s
before the schedule that terminates its instance (``deadlines.request_end``), the cancel counted at the end of its
flexible window and the termination at its start; a ``valid_until`` alone only when no termination may come less
than 60 s after it. A persistent spot request that a reclaim terminates cannot be bounded (``aws_forms``).
``acceptUnbounded`` names resources accepted after review, each by its full URN or its URN's tail
``<type token>::<name>`` (``common.listed``); a bare name matches nothing.
"""

from __future__ import annotations

from datetime import timedelta

from pulumi_policy import ReportViolation, StackValidationArgs, StackValidationPolicy

from gpulease.core import resources as rt
from gpulease.core import vocabulary as v
from gpulease.core.compute import UNKNOWN, read

from . import common as c
from . import deadlines

COMPUTE_TYPES = (*c.UNIT_TYPES, *deadlines.STOPPER_TYPES, rt.AWS_ECS_CAPACITY_PROVIDER)
"""Every type the runtime rules read: the compute forms, their templates, what stops them."""


def _max_runtime(args: StackValidationArgs, report: ReportViolation) -> None:
    config = args.get_config()
    max_hours = float(c.config_value(config, "maxHours", v.DEFAULT_POLICY_MAX_HOURS))
    grace = timedelta(minutes=float(c.config_value(config, "stopGraceMinutes", 5)))
    now = c.now()  # one reading, so the limit and the reported distance agree
    limit = now + timedelta(hours=max_hours)
    for unit, resource in c.units(args.resources):
        if not unit.accelerated:
            continue
        what = c.display_unit(unit)
        raw = unit.tags.get(v.TAG_EXPIRES_AT)
        if raw is UNKNOWN:
            continue
        if raw is None:
            report(f"{what} has no {v.TAG_EXPIRES_AT} tag; accepted: an RFC 3339 UTC deadline no later than now + "
                   f"{max_hours:g} h, e.g. {v.rfc3339(now + timedelta(hours=8))}", resource.urn)
            continue
        expires = c.parse_time(raw)
        if expires is None:
            report(f"{c.display(unit.resource.type, unit.resource.name)}: {v.TAG_EXPIRES_AT}={raw!r} is not an RFC "
                   "3339 timestamp with a UTC offset", resource.urn)
            continue
        if expires > limit:
            hours = (expires - now).total_seconds() / 3600
            report(f"{c.display(unit.resource.type, unit.resource.name)}: {v.TAG_EXPIRES_AT}={raw} is {hours:.0f} h "
                   f"away, more than the {max_hours:g} h allowed (latest accepted: {v.rfc3339(limit)})", resource.urn)
        for d in unit.form.deadlines:
            if d.kind != "release-time":
                continue
            release = read(unit.resource.props, d.time)
            if release is UNKNOWN or release is None:
                continue  # a missing release time is max-runtime-cloud-stop's finding
            released = c.parse_time(release)
            name = c.display(unit.resource.type, unit.resource.name)
            if released is None:
                report(f"{name}: {d.time}={release!r} is not an RFC 3339 UTC time", resource.urn)
            elif released > expires + grace:
                report(f"{name}: {d.time}={release} is later than {v.TAG_EXPIRES_AT}={raw}", resource.urn)


max_runtime = c.judges(StackValidationPolicy(
    name="max-runtime",
    description="Every GPU instance, group or node pool has an expires-at deadline within the allowed runtime.",
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
), COMPUTE_TYPES)


def _cloud_stop(args: StackValidationArgs, report: ReportViolation) -> None:
    config = args.get_config()
    grace = timedelta(minutes=float(c.config_value(config, "stopGraceMinutes", 5)))
    pairs = c.units(args.resources)
    stoppers = deadlines.Stoppers(args.resources, [u for u, _ in pairs])
    linked = [c.registered(r) for r in args.resources if r.resource_type == rt.AWS_ECS_CAPACITY_PROVIDER]
    for unit, resource in pairs:
        if not unit.accelerated or c.listed(config, "acceptUnbounded", unit.resource.urn, resource.urn):
            continue
        what = c.display(unit.resource.type, unit.resource.name)
        form = unit.form
        if not form.deadlines:
            report(f"{c.display_unit(unit)} cannot be bounded: {form.unbounded}", resource.urn)
            continue
        expires = c.parse_time(unit.tags.get(v.TAG_EXPIRES_AT))
        verdict = stoppers.verdict(unit, expires, grace)
        if verdict.ok:
            hazards = form.hazards(unit.resource.props, expires) + deadlines.linked_hazards(unit, linked)
            request = stoppers.request_end(unit, expires, grace)
            for hazard in hazards + ([request] if request else []):
                report(f"{c.display_unit(unit)}: its cloud-side stop would not end it: {hazard}", resource.urn)
            continue
        if verdict.late:
            kind = "terminating schedule" if form.deadlines[0].target == rt.TERMINATE_TARGET else "cloud-side stop"
            report(f"{what}: no {kind} fires by its deadline ({'; '.join(verdict.late)})", resource.urn)
            continue
        decoys = [why for path, why in form.decoys if read(unit.resource.props, path) not in (None, UNKNOWN)]
        note = f" ({'; '.join(decoys)})" if decoys else ""
        first = form.deadlines[0]
        if first.target == rt.TERMINATE_TARGET:
            report(f"{what} has no EventBridge Scheduler schedule terminating it (target {rt.TERMINATE_TARGET}); "
                   f"accepted: a one-time at(...) schedule no later than its {v.TAG_EXPIRES_AT} tag{note}", resource.urn)
        elif first.kind == "release-time":
            report(f"{what} has no {first.time}: nothing outside the instance releases it at its deadline; accepted: "
                   f"auto_release_time no later than its {v.TAG_EXPIRES_AT} tag{note}", resource.urn)
        else:
            report(f"{c.display_unit(unit)} has no cloud-side stop at its deadline; accepted: "
                   f"{'; or '.join(d.accepted for d in form.deadlines)}{note}", resource.urn)


max_runtime_cloud_stop = c.judges(StackValidationPolicy(
    name="max-runtime-cloud-stop",
    description="Every GPU instance, group or node pool has a cloud-side stop at its deadline (a scheduler "
    "schedule, a scheduled scale-in to zero, a fleet expiry, an Alibaba release time or scheduled task).",
    validate=_cloud_stop,
    enforcement_level=c.level("mandatory"),
    config_schema=c.schema(
        {
            "stopGraceMinutes": {"type": "number", "minimum": 0, "default": 5,
                                 "description": "How much later than expires-at the stop may fire."},
            "acceptUnbounded": {"type": "array", "items": {"type": "string"}, "default": [],
                                "description": "Resources accepted without a cloud-side stop, after review: " + c.ACCEPT_FORMS},
        }
    ),
), COMPUTE_TYPES)

POLICIES = [max_runtime, max_runtime_cloud_stop]
