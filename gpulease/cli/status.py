"""``gpulease status STACK``: a running experiment on one screen (or ``--json``): phase, instance, deadline, spend
against the budget, GPU use, checkpoints, readiness and verification, the run manifest (``gpulease/live``)."""

from __future__ import annotations

import argparse

from gpulease.core import clock


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="a running experiment at a glance: deadline, spend, GPU, checkpoints, checks")
    p.add_argument("stack", help="the stack (its outputs through the Pulumi CLI, its spec from stacks/ when there)")
    p.add_argument("--experiment", help="which run of a sweep")
    p.add_argument("--outputs", metavar="FILE", help="the stack's outputs as `pulumi stack output --json` prints them")
    p.add_argument("--region", help="the stack's region, when its stack file is not here")
    p.add_argument("--json", action="store_true", help="print the status document as JSON")
    p.set_defaults(func=cmd_status)


def cmd_status(args: argparse.Namespace) -> int:
    from gpulease.cli.common import wide_console
    from gpulease.live import clients, status, target, view

    found = target.find(args.stack, outputs_file=args.outputs, experiment=args.experiment, region=args.region)
    if not found.region:
        raise target.LiveError(f"stack {args.stack!r}: no region (no stack file here); give --region")
    doc = status.collect(found, clients.CLIENTS(found.cloud, found.region), clock.utcnow())
    if args.json:
        from gpulease.cli.conventions import print_json

        print_json("status", doc, ok=True, legacy=doc)
    else:
        view.print_status(doc, wide_console())
    return 0
