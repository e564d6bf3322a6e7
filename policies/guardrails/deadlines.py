"""The cloud-side stop of each compute unit: which of its form's deadline equivalents the stack holds, and when
they fire (``gpulease.core.compute``'s registry says which equivalents a form accepts).

A stopping resource (an EventBridge Scheduler schedule, an autoscaling scheduled action, an ESS scheduled task)
belongs to a unit when the input naming its target depends on the unit's resource (the engine's property
dependencies) or names one of the unit's identities by value. The instance id is not known during ``pulumi
preview``, so a scheduler schedule whose input is unknown and that depends on nothing covers the unit when the
stack holds exactly one such schedule for that target and one unit that needs it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from gpulease.core import resources as rt
from gpulease.core import vocabulary as v
from gpulease.core.compute import UNKNOWN, ComputeUnit, Registered, read
from gpulease.core.compute.forms import Deadline
from gpulease.core.compute.paths import json_object
from gpulease.core.compute.units import refers

from . import common as c

STOPPER_TYPES = (rt.AWS_SCHEDULE, rt.AWS_AUTOSCALING_SCHEDULE, rt.ALI_SCHEDULED_TASK)
SCHEDULER_PRECISION = timedelta(seconds=60)
"""EventBridge Scheduler "invoke[s] their targets with 60 second precision" (a schedule at 1:00 calls between
1:00:00 and 1:00:59, https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html): a cancel less
than this before the termination may come after it."""
REQUEST_IDS = "SpotInstanceRequestIds"
REQUEST_ID = re.compile(r"^sir-[0-9a-z]+\Z")
OWN_REQUEST = {rt.AWS_INSTANCE: "spotInstanceRequestId", rt.AWS_SPOT_REQUEST: "id"}
"""Where a unit holds the id of its own spot request (an instance's output, a spot request's own id; an aws-native
instance has none: AWS::EC2::Instance returns no spot request id, so a cancel of it cannot be confirmed)."""
OWN_TYPE = "instanceMarketOptions.spotOptions.spotInstanceType"
UNTIL_PATHS = ("validUntil", "instanceMarketOptions.spotOptions.validUntil",
               "launchTemplateData.instanceMarketOptions.spotOptions.validUntil")
"""Where a persistent request's own end is written: a spot request, an instance's or a launch template's market
options (pulumi_aws), an aws-native launch template's data."""
REOPEN_DOC = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/using-spot-instances-request.html#terminating-a-spot-instance"
FLEX_DOC = "https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-flexible-time-windows.html"


@dataclass
class Verdict:
    """What the stack does about one unit's deadline: ``ok`` when one equivalent holds in time, else the reasons
    the candidates found do not (empty when there is none at all)."""

    ok: bool = False
    late: list[str] = field(default_factory=list)


def schedule_fire_span(props: Mapping[str, Any]) -> tuple[Any, str | None]:
    """When a one-time EventBridge Scheduler schedule fires: (earliest, latest), its at() and that plus its flexible
    window ("invokes the target at any time within the time window", https://docs.aws.amazon.com/scheduler/latest/
    UserGuide/managing-schedule-flexible-time-windows.html); ``UNKNOWN`` during preview, None with a problem."""
    expression = read(props, "scheduleExpression")
    if expression is UNKNOWN:
        return UNKNOWN, None
    match = re.match(r"^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)\Z", str(expression or ""))
    if not match:
        return None, f"scheduleExpression {expression!r} is not a one-time at(...) expression"
    zone = read(props, "scheduleExpressionTimezone", "UTC")
    try:
        tz = ZoneInfo(zone if isinstance(zone, str) else "UTC")
    except (KeyError, ValueError):
        return None, f"scheduleExpressionTimezone {zone!r} is not a time zone"
    moment = latest = datetime.fromisoformat(match.group(1)).replace(tzinfo=tz)
    if read(props, "flexibleTimeWindow.mode") == "FLEXIBLE":
        window = rt.number(read(props, "flexibleTimeWindow.maximumWindowInMinutes")) or 0
        latest = moment + timedelta(minutes=window)
    return (moment, latest), None


def _schedule_input(props: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return json_object(read(props, "target.input"))


def _named_ids(data: Mapping[str, Any] | None, key: str) -> list[str] | None:
    if data is None or key not in data:
        return None
    ids = data[key]
    return [str(i) for i in ids] if isinstance(ids, list) else [str(ids)]


def _cancel_input_problem(data: Mapping[str, Any] | None, own: Any, own_readable: bool = True) -> str | None:
    """Why a cancelling schedule's input does not cancel exactly the unit's own request, or None. The input is the
    call's parameters (botocore ``CancelSpotInstanceRequests``: ``SpotInstanceRequestIds``, and ``DryRun``, which
    cancels nothing); unknown during a preview, when nothing is held against it. ``own_readable``: the unit's
    properties hold its request's id (an instance's ``spotInstanceRequestId``); then an empty or unknown one leaves
    a literal id in the input unconfirmed. A spot request's own id is not among its properties (the analyzer hands
    no resource id), so for it a literal is not held against it."""
    if data is None:
        return None
    accepted = (f"accepted: exactly {{\"{REQUEST_IDS}\": [\"{own if isinstance(own, str) and own else '<its request id>'}"
                "\"]}, nothing else (no DryRun)")
    if set(data) != {REQUEST_IDS}:
        return f"its input has {', '.join(sorted(map(str, data))) or 'no keys'}; {accepted}"
    ids = data[REQUEST_IDS]
    if ids == [""]:
        # What an instance's spot_instance_request_id is when it has no request, and what the offline review renders
        # for one that takes its spot market options from a launch template: not a request this check can confirm.
        return (f"its input names an empty request id ({REQUEST_IDS}=['']): the instance's spot_instance_request_id "
                "is empty, as the offline review renders it for an instance whose spot options come from its launch "
                "template (the cancel's request cannot be confirmed here) and as EC2 gives it for an instance without "
                f"a spot request; {accepted}, or the spot options on the instance itself")
    if not (isinstance(ids, list) and len(ids) == 1 and isinstance(ids[0], str) and REQUEST_ID.match(ids[0])):
        return f"its input names {REQUEST_IDS}={ids!r}, not one spot request id (sir-...); {accepted}"
    if own_readable and not (isinstance(own, str) and own):
        # The unit's own id is empty or unknown here (a launch template's market options, offline): a literal id in
        # the input is then confirmable no more than [""] is, and may be another instance's request.
        return (f"its input names {ids[0]}, but this unit's own request id is {'empty' if own == '' else 'not known'} "
                "here, so the cancel cannot be confirmed as its request's; "
                f"{accepted}, or the spot options on the instance itself")
    if isinstance(own, str) and own and ids[0] != own:
        return f"its input names {ids[0]}, not this unit's request {own}; {accepted}"
    return None


def persistent_request(unit: ComputeUnit, expires: datetime | None) -> str | None:
    """Why the unit runs on a persistent spot request with no end of its own, or None: read on the unit, and for a
    form whose request a schedule may cancel (an instance) on the launch templates it launches from when it does not
    name its spot request type itself (an ``aws.ec2.Instance(launch_template=...)`` takes the template's). Market
    options without ``spot_options.spot_instance_type`` on the instance do not hide a template's persistent type:
    how EC2 merges the two is not documented (RunInstances: "Any parameters that you specify in RunInstances
    override the same parameters in the launch template", not said of a part of one), so the template's counts."""
    problem = unit.form.persistent(unit.resource.props, expires)
    props = unit.resource.props
    if problem is not None or unit.form.cancels is None or read(props, OWN_TYPE) not in (None, UNKNOWN):
        return problem
    own_market = read(props, "instanceMarketOptions") is not None
    for tpl in unit.templates:
        if tpl.form is not None and (found := tpl.form.persistent(tpl.props, expires)) is not None:
            merged = (" (the instance's own instance_market_options name no spot_instance_type, and how EC2 merges "
                      "them with the template's is not documented: judged as the template's)") if own_market else ""
            return f"its launch template {tpl.name}'s {found}{merged}"
    return None


def _holds(values: Mapping[str, Any], requires: Mapping[str, Any]) -> list[str]:
    """Which required values a stopper's input does not hold (an unknown value is not held against it)."""
    wrong = []
    for key, want in requires.items():
        got = values[key] if key in values else read(values, key)  # a dotted key reaches into the input
        if got is UNKNOWN:
            continue
        same = rt.number(got) == want if isinstance(want, int | float) and not isinstance(want, bool) else got == want
        if not same:
            wrong.append(f"{key}={got!r} (accepted: {want!r})")
    return wrong


class Stoppers:
    """The stack's stopping resources, indexed once for every unit: each schedule's input parsed once, and the
    schedules found by what they name (a dependency's URN, an id in their input), so that judging every unit of a
    sweep is linear in the stack, not in its square."""

    def __init__(self, resources: list[Any], units: list[ComputeUnit]):
        self.resources = [c.registered(r) for r in resources if r.resource_type in STOPPER_TYPES]
        self.units = units
        self.schedulers = [
            s for s in self.resources
            if s.type == rt.AWS_SCHEDULE and read(s.props, "state", "ENABLED") != "DISABLED"
        ]
        self._inputs = [_schedule_input(s.props) for s in self.schedulers]
        self._by_arn: dict[str, list[int]] = {}
        for i, sched in enumerate(self.schedulers):
            arn = read(sched.props, "target.arn")
            if isinstance(arn, str):  # the deadline's target is a string: nothing else equals it
                self._by_arn.setdefault(arn, []).append(i)
        self._indexes: dict[tuple[str, str], tuple[list[int], dict[str, list[int]], dict[str, list[int]], list[int]]] = {}
        self._needing: dict[int, int] = {}
        self._cancelling: dict[int, int] = {}

    def _index(self, d: Deadline) -> tuple[list[int], dict[str, list[int]], dict[str, list[int]], list[int]]:
        """The schedules calling ``d.target`` (by position), by the URN they depend on for their target, by the ids
        their input names under ``d.ids_key``, and those that name nothing (input unknown, no dependency)."""
        key = (d.target, d.ids_key)
        if key not in self._indexes:
            mine = self._by_arn.get(d.target, [])
            by_dependency: dict[str, list[int]] = {}
            by_id: dict[str, list[int]] = {}
            unmatched = []
            for i in mine:
                dependencies = self.schedulers[i].dependencies.get("target") or ()
                ids = _named_ids(self._inputs[i], d.ids_key)
                for urn in dict.fromkeys(dependencies):
                    by_dependency.setdefault(urn, []).append(i)
                for named in dict.fromkeys(ids or ()):
                    by_id.setdefault(named, []).append(i)
                if not dependencies and ids is None:
                    unmatched.append(i)
            self._indexes[key] = (mine, by_dependency, by_id, unmatched)
        return self._indexes[key]

    def _cancel_count(self, d: Deadline) -> int:
        """How many accelerated units with a persistent request this cancelling deadline applies to."""
        if id(d) not in self._cancelling:
            self._cancelling[id(d)] = sum(1 for u in self.units if u.accelerated and u.form.cancels == d
                                          and persistent_request(u, None) is not None)
        return self._cancelling[id(d)]

    def _needing_count(self, d: Deadline) -> int:
        """How many accelerated units this kind of deadline applies to."""
        if id(d) not in self._needing:
            self._needing[id(d)] = sum(1 for u in self.units if u.accelerated and d in u.form.deadlines)
        return self._needing[id(d)]

    def _covering(self, unit: ComputeUnit, d: Deadline, needing: int) -> list[tuple[Registered, Any]]:
        """The enabled schedules calling ``d.target`` for ``unit``: by dependency or by a named id; during preview
        (input unknown, no dependency) the one such schedule when exactly one unit (``needing``) needs one."""
        mine, by_dependency, by_id, unmatched = self._index(d)
        hits = set(by_dependency.get(unit.resource.urn, ()))
        for identity in unit.resource.identities():
            hits.update(by_id.get(identity, ()))
        covering = [(self.schedulers[i], self._inputs[i]) for i in sorted(hits)]
        if not covering and len(mine) == 1 and needing == 1 and unmatched:
            covering = [(self.schedulers[unmatched[0]], None)]  # input unknown during preview and no dependency: one and one
        return covering

    def _fires(self, covering: list[tuple[Registered, Any]], d: Deadline, expires: datetime | None,
               grace: timedelta, verdict: Verdict) -> list[Any]:
        """When each covering schedule fires, (earliest, latest) (``UNKNOWN`` during preview); the wrong or late ones
        go to ``verdict``."""
        times = []
        for sched, data in covering:
            span, problem = schedule_fire_span(sched.props)
            fires = span if span is UNKNOWN or span is None else span[1]
            wrong = _holds(data, d.requires) if data is not None else []
            if problem or wrong:
                verdict.late.append(f"{sched.name}: {problem or ', '.join(wrong)}")
            elif fires is not UNKNOWN and fires is not None and expires is not None and fires > expires + grace:
                verdict.late.append(f"{sched.name} fires at {v.rfc3339(fires)}, after {v.TAG_EXPIRES_AT}="
                                    f"{v.rfc3339(expires)}")
            else:
                verdict.ok = True
                times.append(span)
        return times

    def _scheduler(self, unit: ComputeUnit, d: Deadline, expires: datetime | None, grace: timedelta,
                   verdict: Verdict) -> list[Any]:
        return self._fires(self._covering(unit, d, self._needing_count(d)), d, expires, grace, verdict)

    def request_end(self, unit: ComputeUnit, expires: datetime | None, grace: timedelta) -> str | None:
        """Why the unit's persistent spot request would outlive its deadline, or None: no persistent request, one
        that ends by itself in time (its form's ``persistent`` reader), or a schedule cancelling exactly that request
        (``cancels``) by the deadline and before any schedule terminating the unit (terminating first re-opens it).
        A request ended by its ``valid_until`` alone is held to the same order: a termination less than 60 s after
        it re-opens the request while it is still valid, unless a cancel comes first."""
        form = unit.form
        problem = persistent_request(unit, expires)
        until = None
        if problem is None:
            problem = persistent_request(unit, None)  # persistent, and ended in time by its own valid_until?
            if problem is None or form.cancels is None:
                return None
            until = next((when for props in (unit.resource.props, *(tpl.props for tpl in unit.templates))
                          for path in UNTIL_PATHS if (when := c.parse_time(read(props, path))) is not None), None)
        if form.cancels is None:
            return problem
        d = form.cancels
        verdict = Verdict()
        own = read(unit.resource.props, OWN_REQUEST.get(unit.resource.type, "spotInstanceRequestId"))
        covering = []
        for sched, data in self._covering(unit, d, self._cancel_count(d)):
            wrong = _cancel_input_problem(data, own, own_readable=unit.resource.type != rt.AWS_SPOT_REQUEST)
            if wrong:
                verdict.late.append(f"{sched.name}: {wrong}")
            else:
                covering.append((sched, data))
        cancels = self._fires(covering, d, expires, grace, verdict)
        terminates = [t for dl in form.deadlines if dl.kind == "scheduler"
                      for t in self._scheduler(unit, dl, expires, grace, Verdict())]
        # The cancel counts by when it has certainly been called (the latest of its window), the termination by the
        # earliest it may come (its at(), a flexible window only widening it): the cancel must come first.
        first_cancel = min((t[1] for t in cancels if isinstance(t, tuple)), default=None)
        first_stop = min((t[0] for t in terminates if isinstance(t, tuple)), default=None)
        if until is not None and (first_stop is None or first_stop - until >= SCHEDULER_PRECISION):
            return None  # its valid_until has ended it before any termination can come
        if until is not None and not verdict.ok:
            assert first_stop is not None
            return (f"its request ends at valid_until={v.rfc3339(until)}, but a schedule may terminate its instance at "
                    f"{v.rfc3339(first_stop)}, not at least 60 s after that: a termination re-opens a persistent request "
                    f"that is still valid, which launches a new instance ({REOPEN_DOC}), and how promptly EC2 ends a "
                    "request at its ValidUntil is not documented; accepted: the termination at least 60 s after "
                    f"valid_until, or {d.accepted}")
        if not verdict.ok:
            late = f" ({'; '.join(verdict.late)})" if verdict.late else ""
            return f"{problem}, or {d.accepted}{late}"
        if first_cancel is not None and first_stop is not None and first_stop - first_cancel < SCHEDULER_PRECISION:
            return (f"its request is cancelled at {v.rfc3339(first_cancel)}, not at least 60 s before its termination "
                    f"at {v.rfc3339(first_stop)}: terminating first re-opens a persistent request, which launches a new "
                    f"instance ({REOPEN_DOC}), EventBridge Scheduler calls a target anywhere in the 60 s after "
                    "its time (https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html), and a "
                    f"flexible time window anywhere in the window ({FLEX_DOC}): the cancel is counted at the end of its "
                    "window, the termination at the start of its own; accepted: the cancelling schedule's latest time "
                    "at least 60 s earlier than the terminating one's earliest")
        return None

    def _group_schedule(self, unit: ComputeUnit, d: Deadline, expires: datetime | None, grace: timedelta,
                        verdict: Verdict, token: str, time_key: str, recurrence_key: str) -> None:
        for task in (s for s in self.resources if s.type == token):
            if not refers(task, read(task.props, d.link), d.link, unit.resource):
                continue
            if read(task.props, "taskEnabled") is False:
                continue
            values = {key: read(task.props, key) for key in d.requires}
            wrong = _holds(values, d.requires)
            for other in ("minSize", "desiredCapacity", "minValue"):
                size = rt.number(read(task.props, other))
                if other in task.props and size is not None and size > 0:
                    wrong.append(f"{other}={size:g} keeps instances running")
            if read(task.props, recurrence_key) is not None:
                wrong.append(f"{recurrence_key} is set; accepted: a one-time action")
            when = c.parse_time(read(task.props, time_key))
            if wrong:
                verdict.late.append(f"{task.name}: {'; '.join(wrong)}")
            elif when is None:
                verdict.late.append(f"{task.name}: {time_key}={read(task.props, time_key)!r} is not an RFC 3339 UTC time")
            elif expires is not None and when > expires + grace:
                verdict.late.append(f"{task.name} acts at {v.rfc3339(when)}, after {v.TAG_EXPIRES_AT}={v.rfc3339(expires)}")
            else:
                verdict.ok = True

    def verdict(self, unit: ComputeUnit, expires: datetime | None, grace: timedelta) -> Verdict:
        verdict = Verdict()
        props = unit.resource.props
        for d in unit.form.deadlines:
            if d.kind == "scheduler":
                self._scheduler(unit, d, expires, grace, verdict)
            elif d.kind == "asg-schedule":
                self._group_schedule(unit, d, expires, grace, verdict, rt.AWS_AUTOSCALING_SCHEDULE, "startTime",
                                     "recurrence")
            elif d.kind == "ess-task":
                self._group_schedule(unit, d, expires, grace, verdict, rt.ALI_SCHEDULED_TASK, "launchTime",
                                     "recurrenceType")
            elif d.kind in ("expiry", "release-time"):
                moment = read(props, d.time)
                if moment is UNKNOWN:
                    verdict.ok = True  # not known during preview: nothing to hold against it
                    continue
                if moment is None:
                    continue
                if d.flag and read(props, d.flag) is not True and read(props, d.flag) is not UNKNOWN:
                    verdict.late.append(f"{d.time}={moment} but {d.flag} is not true: the instances outlive it")
                    continue
                when = c.parse_time(moment)
                if when is None:
                    verdict.late.append(f"{d.time}={moment!r} is not an RFC 3339 UTC time")
                elif d.kind == "expiry" and expires is not None and when > expires + grace:
                    verdict.late.append(f"{d.time}={moment} is after {v.TAG_EXPIRES_AT}={v.rfc3339(expires)}")
                else:
                    verdict.ok = True  # a late release time is max-runtime's finding
        return verdict


def linked_hazards(unit: ComputeUnit, resources: list[Registered]) -> list[str]:
    """Problems other resources linked to the unit cause its deadline (an ECS capacity provider's protection)."""
    found = []
    for hazard in unit.form.linked_hazards:
        for other in resources:
            if other.type == hazard.token and refers(other, read(other.props, hazard.path), hazard.dependency,
                                                     unit.resource):
                problem = hazard.problem(other.props)
                if problem:
                    found.append(problem)
    return found
