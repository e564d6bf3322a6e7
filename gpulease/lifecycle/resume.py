"""``gpulease resume STACK``: the one command that brings back a spot experiment whose instance was reclaimed.

It reads the stack file with ``up``'s loader (``deploy.load``: the same YAML 1.2 reader and spec), refuses a stack
that is not spot or whose deadline has passed (before any call that changes anything), then per instance:

- stopped (an Alibaba Cloud reclaim in economical mode, or a stop): started again through the cloud's API
  (``StartInstance`` / ``StartInstances``, ``resume_clouds``); the instance side takes the boot as a resumption;
- stopped by an AWS spot interruption: left alone, EC2 alone restarts it when capacity returns;
- running or on its way: nothing to do;
- gone (a reclaim released it, ``spot.recover: false``): ``pulumi up --refresh`` through ``deploy`` (the review
  first), which creates the instance again on the kept data disk; the program itself refuses a recorded deadline
  that has passed (``components/deadline.py``).

Only instances of the stack's own experiments (their ``gpulease:experiment`` tag one of the stack file's experiment
names) are considered; another instance that carries the stack's two tags is named as foreign and left alone, and
never stands in for a missing one. The deadline is the earliest of the stack's recorded ``deadline`` (its outputs:
the stack must be deployed), each instance's ``gpulease:expires-at`` tag (what the cloud-side end and the watchdog
keep), and ``expiresAt`` when the spec pins it: an instance's own tag alone never lets it start. A deadline that
cannot be read is refused like a passed one (fail closed). On Alibaba Cloud a stopped instance that the cloud does
not show as reclaimed (``resume_clouds``: the ``Recycling`` lock) is refused: the watchdog stops its own instance
at its deadline, idle or budget end when the release is refused, and that stop is meant to last.
On AWS an interrupted instance whose spot request has ended is named as such: EC2 will not start it again."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from gpulease.core import clock
from gpulease.core import vocabulary as v
from gpulease.core.errors import UserError
from gpulease.ephemeral.backend import StackMissingError
from gpulease.ephemeral.progress import Progress
from gpulease.lifecycle import deploy, resume_clouds
from gpulease.review.stack_commands import command

MIN_LEAD = timedelta(minutes=5)
"""A deadline closer than this is treated as passed: the watchdog's final sync alone takes minutes (the program's
own refusal of a recorded deadline uses the same margin)."""


class ResumeRefusedError(UserError):
    """Not a spot stack, a deadline passed or unreadable, or nothing of the stack deployed: nothing was changed."""


class ResumeFailedError(RuntimeError):
    """A cloud call or ``pulumi up`` failed: what was started before it stays started."""


@dataclass
class ResumeResult:
    stack: str
    cloud: str
    started: list[str] = field(default_factory=list)
    running: list[str] = field(default_factory=list)
    cloud_restarts: list[str] = field(default_factory=list)
    requests_ended: dict[str, str] = field(default_factory=dict)
    foreign: list[str] = field(default_factory=list)
    redeployed: bool = False
    deadline: str | None = None
    path: Path | None = None
    """The stack file: the commands printed after ``resume`` name it (``commands.stack_word``)."""

    def as_dict(self) -> dict[str, Any]:
        return {"stack": self.stack, "cloud": self.cloud, "started": self.started, "running": self.running,
                "cloudRestarts": self.cloud_restarts, "requestsEnded": self.requests_ended, "foreign": self.foreign,
                "redeployed": self.redeployed, "deadline": self.deadline}


def _refuse_deadline(stack: str, value: str | None, what: str, now: datetime) -> datetime:
    """The deadline as a moment, refusing one that is missing, unreadable, passed or under ``MIN_LEAD`` away."""
    fix = "raise deadlineRenewal by one (or set a later expiresAt) and run gpulease up"
    try:
        moment = v.parse_rfc3339(value or "")
    except (TypeError, ValueError):
        raise ResumeRefusedError(f"stack {stack!r}: {what} has no readable deadline ({value!r}); nothing was started; "
                                 f"accepted: an RFC 3339 UTC deadline: {fix}") from None
    if moment <= now + MIN_LEAD:
        raise ResumeRefusedError(f"stack {stack!r}: its deadline {v.rfc3339(moment)} ({what}) has passed; nothing was "
                                 f"started; to run again on purpose, {fix}")
    return moment


def _output_deadlines(outputs: dict[str, Any]) -> list[str | None]:
    per = outputs.get("experiments")
    if isinstance(per, dict) and per:
        return [o.get("deadline") if isinstance(o, dict) else None for o in per.values()]
    return [outputs.get("deadline")]


def resume(stack: str, progress: Progress) -> ResumeResult:
    st = deploy.load(stack)
    stack, exps = st.name, st.spec.experiments
    not_spot = [e.name for e in exps if e.market != "spot"]
    if not_spot:
        raise ResumeRefusedError(f"{st.path}: stack {stack!r} is not spot ({', '.join(not_spot)}: market: on-demand, "
                                 "never reclaimed); nothing was changed; accepted: a stack with market: spot (gpulease "
                                 "up starts an on-demand one again)")
    parked = [e.name for e in exps if e.phase == "parked"]
    if parked:
        raise ResumeRefusedError(f"{st.path}: stack {stack!r} is parked ({', '.join(parked)}): it keeps no instance; "
                                 "accepted: phase: train (or prep) and gpulease up")
    now = clock.utcnow()
    for e in exps:
        if e.expires_at is not None:
            _refuse_deadline(stack, v.rfc3339(e.expires_at), f"expiresAt of {e.name}", now)
    cloud = st.spec.cloud
    result = ResumeResult(stack, cloud, path=st.path)
    fleet = resume_clouds.FLEETS[cloud](st.region)
    try:
        outputs = deploy.backend_for(st).outputs(stack)
    except StackMissingError:
        raise ResumeRefusedError(f"stack {stack!r} is not deployed; nothing was changed; accepted: "
                                 f"{command('up', stack, st.path)}") from None
    moments = [_refuse_deadline(stack, d, "the stack's outputs", now) for d in _output_deadlines(outputs)]
    with progress.step(f"find {stack}'s instances on {cloud} {st.region}"):
        listed = fleet.find(stack)
    names = {e.name for e in exps}
    found = [f for f in listed if f.experiment in names]
    result.foreign = sorted(f.id for f in listed if f.experiment not in names)
    moments += [_refuse_deadline(stack, f.expires_at, f"instance {f.id}", now) for f in found]
    expected = sum(e.nodes for e in exps)
    missing = expected - len(found)
    result.deadline = v.rfc3339(min(moments)) if moments else None
    result.running = sorted(f.id for f in found if f.state in ("running", "pending", "starting"))
    result.cloud_restarts = sorted(f.id for f in found if f.state == "stopped" and f.cloud_restarts and not f.request_end)
    result.requests_ended = {f.id: f.request_end for f in sorted(found, key=lambda f: f.id)
                             if f.state == "stopped" and f.cloud_restarts and f.request_end}
    busy = sorted(f.id for f in found if f.state == "stopping")
    if busy:
        raise ResumeFailedError(f"stack {stack!r}: {', '.join(busy)} still stopping; run {command('resume', stack, st.path)} "
                                "again once it has stopped")
    held = sorted((f for f in found if f.state == "stopped" and f.reclaimed is False), key=lambda f: f.id)
    if held:
        shown = "; ".join(f"{f.id}: {f.stop_detail}" for f in held if f.stop_detail)
        raise ResumeRefusedError(
            f"stack {stack!r}: {', '.join(f.id for f in held)} stopped, but {cloud} does not show a reclaim (no "
            "OperationLocks LockReason Recycling)" + (f"; it shows {shown}, which the watchdog's own stop shows too"
                                                      if shown else "") +
            ": the watchdog stops its own instance at its deadline, idle or budget end; nothing "
            f"was started; accepted: a reclaimed instance; to run again on purpose, {command('up', stack, st.path)}")
    stopped = sorted(f.id for f in found if f.state == "stopped" and not f.cloud_restarts)
    if stopped:
        with progress.step(f"start {', '.join(stopped)}"):
            try:
                fleet.start(stopped)
            except resume_clouds.ResumeCloudError as exc:  # no stock, a price above the cap, throttling: one line
                raise ResumeFailedError(f"stack {stack!r}: starting {', '.join(stopped)} failed: "
                                        f"{_one_line(exc)}; run {command('resume', stack, st.path)} again later") from None
        result.started = stopped
    if missing > 0:
        progress.note(f"{missing} of {expected} instance(s) gone: pulumi up --refresh creates them on the kept disk")
        try:
            deploy.up(stack, progress, wait=False, refresh=True)
        except (deploy.ReviewRefusedError, deploy.DeployError) as exc:
            raise ResumeFailedError(_one_line(exc)) from None
        result.redeployed = True
    return result


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:400]
