"""``gpulease resume STACK``: bring back a spot experiment whose instance a reclaim stopped or released: start the
stopped instance again, or ``pulumi up --refresh`` when it is gone; refused past the deadline or on a stack that is
not spot (``gpulease/lifecycle/resume.py``)."""

from __future__ import annotations

import argparse

from gpulease.cli.envelope import (
    EXIT_FAILED,
    EXIT_OK,
    add_parser,
    call_failed,
    envelope,
    guarded,
    print_json,
)
from gpulease.cli.printable import printable
from gpulease.cli.stack_arg import stack_type


def register(sub: argparse._SubParsersAction) -> None:
    p = add_parser(
        sub, "resume", help="bring back a reclaimed spot experiment: start its stopped instance, or recreate it",
        description="For a spot stack whose instance a reclaim stopped or released: start the stopped instance "
        "again (Alibaba Cloud StartInstance, AWS StartInstances; an AWS instance stopped by a spot interruption is "
        "left to EC2, which alone restarts it), or run `pulumi up --refresh` (review first) when it is gone, on the "
        "kept data disk. The instance resumes the job from its checkpoint. Only instances of the stack's own "
        "experiments are touched; an Alibaba Cloud instance stopped without a reclaim (the watchdog's own stop) is "
        "refused. Refused, with nothing changed, when the stack's recorded deadline (or an instance's) has passed or "
        "the stack is not spot.",
        codes=((EXIT_OK, "started, recreated, or already running"),
               (EXIT_FAILED, "a cloud error (no stock, a price above the cap, throttling, unreachable) or pulumi up failed")))
    p.add_argument("stack", type=stack_type())
    p.set_defaults(func=guarded(cmd_resume))


def cmd_resume(args: argparse.Namespace) -> int:
    from gpulease.ephemeral.backend import OutputsUnreadableError
    from gpulease.ephemeral.progress import make_progress
    from gpulease.lifecycle.resume import ResumeFailedError, resume
    from gpulease.lifecycle.resume_clouds import ResumeCloudError

    progress = make_progress(True)  # progress on stderr: stdout carries only the answer
    try:
        result = resume(args.stack, progress)
    except (ResumeFailedError, ResumeCloudError, OutputsUnreadableError) as exc:
        return call_failed(args, "resume", "resume-failed", exc)
    finally:
        progress.close()
    if args.json:
        print_json(envelope("resume", result.as_dict()))
        return EXIT_OK
    until = f" (deadline {result.deadline})" if result.deadline else ""
    for iid in result.started:
        print(f"{args.stack}: started {iid}{until}; it resumes from its checkpoint")
    for iid in result.running:
        print(f"{args.stack}: {iid} is running already")
    for iid in result.cloud_restarts:
        print(f"{args.stack}: {iid} was stopped by a spot interruption; EC2 starts it again when capacity returns")
    for iid, ended in result.requests_ended.items():
        print(f"{args.stack}: {iid} was stopped by a spot interruption and its request ended ({printable(ended)}): "
              "EC2 will not start it again; the deadline schedule terminates it; the data disk is kept")
    for iid in result.foreign:
        print(f"{args.stack}: {iid} carries the stack's tags but none of its experiments' names: not ours, left alone")
    if result.redeployed:
        from gpulease.review.stack_commands import command

        print(f"{args.stack}: recreated by pulumi up{until}; status: {command('status', result.stack, result.path)}")
    return EXIT_OK
