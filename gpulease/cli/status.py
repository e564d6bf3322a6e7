"""``gpulease status STACK``: a running experiment on one screen (or ``--json``): phase, instance, deadline, spend
against the budget, GPU use, checkpoints, readiness and verification, the run manifest (``gpulease/live``)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

from gpulease.cli.conventions import EXIT_INTERRUPTED
from gpulease.cli.printable import printable
from gpulease.cli.stack_arg import stack_type
from gpulease.core import clock
from gpulease.core.flag_numbers import number

WATCH_SECONDS = 30.0
WATCH_HOURS = 12.0
"""``--watch`` stops by itself after this long: a forgotten terminal does not poll a bucket for ever."""


_seconds = number("a number of seconds in 5-3600", 5, 3600, example="30")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="a running experiment at a glance: deadline, spend, GPU, checkpoints, checks")
    p.add_argument("stack", type=stack_type(), help="the stack (its outputs through the Pulumi CLI, its spec from stacks/ when there)")
    p.add_argument("--experiment", help="which run of a sweep")
    p.add_argument("--outputs", metavar="FILE", help="the stack's outputs as `pulumi stack output --json` prints them")
    p.add_argument("--region", help="the stack's region, when its stack file is not here")
    p.add_argument("--json", action="store_true", help="print the status document as JSON")
    p.add_argument("--watch", nargs="?", const=WATCH_SECONDS, type=_seconds, metavar="SECONDS",
                   help=f"redraw every SECONDS (default {WATCH_SECONDS:g}) until Ctrl-C, at most {WATCH_HOURS:g} h; "
                   "with --json, one envelope per refresh, each on one line (JSON lines)")
    p.set_defaults(func=cmd_status)


def cmd_status(args: argparse.Namespace) -> int:
    from gpulease.cli.common import wide_console
    from gpulease.live import clients, status, target, view

    found = target.find(args.stack, outputs_file=args.outputs, experiment=args.experiment, region=args.region)
    if not found.region:
        raise target.LiveError(f"stack {args.stack!r}: no region (no stack file here); give --region")
    readers = clients.CLIENTS(found.cloud, found.region)
    if args.watch is None:
        doc = status.collect(found, readers, clock.utcnow())
        if args.json:
            from gpulease.cli.conventions import print_json

            print_json("status", doc, ok=True, legacy=doc)
        else:
            view.print_status(doc, wide_console(), printable)
        return 0
    return watch(lambda: status.collect(found, readers, clock.utcnow()), args.watch, args.json)


SLEEP = time.sleep
CLOCK = time.monotonic


def watch_line(doc: dict) -> str:
    """One refresh of ``--watch --json``: the envelope (``conventions.ENVELOPE_SCHEMA``, the document's old top-level
    keys kept beside it for one release, as ``status --json`` does), on one line (JSON lines)."""
    from gpulease.cli.conventions import envelope

    return json.dumps(envelope("status", doc, ok=True, legacy=doc), default=str) + "\n"


def watch(collect: Callable[[], dict], every: float, as_json: bool) -> int:
    """Redraw until Ctrl-C (exit 0, the screen left as it was) or ``WATCH_HOURS``; JSON: one envelope per refresh,
    one per line."""
    from gpulease.cli.common import wide_console
    from gpulease.live import view

    console = wide_console()
    deadline = CLOCK() + WATCH_HOURS * 3600
    try:
        while True:
            doc = collect()
            if as_json:
                sys.stdout.write(watch_line(doc))
                sys.stdout.flush()
            else:
                if console.is_terminal:
                    console.clear()
                view.print_status(doc, console, printable)
                console.print(f"every {every:g} s; Ctrl-C to stop", style="dim")
            if CLOCK() + every > deadline:
                return 0
            SLEEP(every)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED  # Ctrl-C ends the watch: 130, the table every --help lists
