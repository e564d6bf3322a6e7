"""``gpulease pull STACK [PREFIX ...]``: download results from the stack's bucket (default ``final/`` and
``logs/``) with a progress bar; files already here with the same size are skipped. Bounded as staging is: an overall
deadline and a page cap per listing (``gpulease.transfer.bounded``), both in its output."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from components.spec.text import hidden_character
from gpulease.cli.conventions import EXIT_INCOMPLETE, error_entry, one_line, print_json
from gpulease.cli.shown import shown
from gpulease.cli.stack_arg import stack_type
from gpulease.core.flag_numbers import number
from gpulease.transfer.bounded import DEFAULT_DEADLINE_SECONDS, MAX_PAGES, PullBounds
from gpulease.transfer.run import (
    DEFAULT_PULL_PREFIXES,
    add_location_options,
    incomplete_line,
    located,
    pull,
    store_for,
)

DEADLINE_SECONDS = number("a number of seconds", 0, 7 * 24 * 3600, above=True,
                          accepted=f"above 0, at most 604800 (a week), default {DEFAULT_DEADLINE_SECONDS:g}",
                          example="3600")
"""``--deadline-seconds``: a finite number of seconds above 0 and at most a week."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("pull", help="download results (final/, logs/) from a stack's bucket, with progress")
    p.add_argument("stack", type=stack_type(), help="a stack name in stacks/ or a stack file")
    p.add_argument("prefixes", nargs="*", metavar="PREFIX", type=_prefix,
                   help=f"folders in the bucket (default {' '.join(DEFAULT_PULL_PREFIXES)})")
    p.add_argument("--dest", type=_dest, help="the local folder (default ./<stack>)")
    p.add_argument("--deadline-seconds", type=DEADLINE_SECONDS, default=DEFAULT_DEADLINE_SECONDS, metavar="SECONDS",
                   help=f"the whole pull's deadline (default {DEFAULT_DEADLINE_SECONDS:g}, as long as a stage on the "
                   f"instance); each listing is also capped at {MAX_PAGES} pages")
    add_location_options(p)
    p.add_argument("--json", action="store_true", help="machine-readable output, no progress bar")
    p.set_defaults(func=run)


def _visible(text: str, what: str, accepted: str) -> str:
    hidden = hidden_character(text)
    if hidden:
        raise argparse.ArgumentTypeError(f"{what} {text!r}: {hidden}; accepted: {accepted}")
    return text


def _dest(text: str) -> Path:
    return Path(_visible(text, "--dest", "a local folder name of visible characters, e.g. ./results"))


def _prefix(text: str) -> str:
    return _visible(text, "PREFIX", "a folder in the bucket such as final/ or logs/")


def run(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    where = located(args)
    prefixes = [p if p.endswith("/") else f"{p}/" for p in args.prefixes] or list(DEFAULT_PULL_PREFIXES)
    dest = args.dest or Path(where.stack)
    limits = PullBounds(args.deadline_seconds)
    result = pull(where, store_for(where, args.profile), prefixes, dest, console, bar=not args.json, limits=limits)
    if result["failed"]:  # the rest arrived; the ones that cannot be written beside them are named: exit 3
        line = one_line(incomplete_line(result))
        print(f"gpulease: {line}", file=sys.stderr)
        if args.json:
            print_json("pull", result, ok=False, errors=[error_entry("pull-incomplete", line)], legacy=result)
        return EXIT_INCOMPLETE
    if args.json:
        print_json("pull", result, ok=True, legacy=result)
    else:
        console.print(f"{shown(where.bucket)} (found by {shown(where.found_by)}): received {len(result['received'])}, "
                      f"already here {len(result['skipped'])}, into {shown(result['dest'])} ({limits.pages} listing pages "
                      f"of at most {limits.max_pages}, deadline {limits.seconds:g} s)")
    return 0
