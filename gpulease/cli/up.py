"""``gpulease up STACK``: review offline (a mandatory violation refuses), ``pulumi up`` with the policy pack,
streaming progress, the next zone or type the spec allows on a capacity error at first creation, then the
instance's ready and verify records, and how to connect (``gpulease/lifecycle/deploy.py``)."""

from __future__ import annotations

import argparse

from gpulease.cli.envelope import (
    EXIT_FAILED,
    EXIT_OK,
    add_parser,
    call_failed,
    envelope,
    guarded,
    minutes,
    print_json,
)
from gpulease.cli.stack_arg import stack_type


def register(sub: argparse._SubParsersAction) -> None:
    from gpulease.lifecycle.deploy import READY_MINUTES

    p = add_parser(
        sub, "up", help="review, pulumi up with the policy pack, wait for the instance to report ready and verified",
        description="Review the stack offline first (a mandatory violation refuses, nothing deployed), then run "
        "`pulumi up` with the gpulease policy pack through the Automation API. On a capacity error at first "
        "creation (InsufficientInstanceCapacity, OperationDenied.NoStock) the next zone or type the spec allows is "
        "tried, in price order, before anything that holds data was created elsewhere. Then wait for the instance's "
        "ready (and verify) record in the bucket and print how to connect.",
        codes=((EXIT_OK, "up; the instance reported ready (and verified)"),
               (EXIT_FAILED, "the review refused, pulumi up failed, or the instance did not report in time")))
    p.add_argument("stack", type=stack_type())
    p.add_argument("--wait", type=minutes, default=READY_MINUTES, metavar="MINUTES",
                   help=f"how long to wait for the ready record (default {READY_MINUTES:g})")
    p.add_argument("--no-wait", action="store_true", help="return once pulumi up is done")
    p.set_defaults(func=guarded(cmd_up))


def cmd_up(args: argparse.Namespace) -> int:
    from gpulease.ephemeral.backend import OutputsUnreadableError
    from gpulease.ephemeral.progress import make_progress
    from gpulease.lifecycle.deploy import DeployError, ReviewRefusedError, up

    progress = make_progress(True)  # progress on stderr: stdout carries only the answer
    try:
        result = up(args.stack, progress, wait_minutes=args.wait, wait=not args.no_wait)
    except (ReviewRefusedError, DeployError, OutputsUnreadableError) as exc:
        code = "review-refused" if isinstance(exc, ReviewRefusedError) else "deploy-failed"
        return call_failed(args, "up", code, exc)
    finally:
        progress.close()
    if args.json:
        print_json(envelope("up", result.as_dict()))
        return EXIT_OK
    ready = "ready" if result.ready else "not waited for"
    verified = ", verified" if result.verify else ""
    print(f"{args.stack}: {result.outputs.get('instanceId')} ({result.outputs.get('instanceType')}) {ready}{verified}")
    from gpulease.review.stack_commands import command

    # One line each: side by side they were wider than an 80-column terminal.
    print(f"connect: {result.connect}\nstatus:  {command('status', result.stack, result.path)}\n"
          f"logs:    {command('logs', result.stack, result.path)}")
    return EXIT_OK
