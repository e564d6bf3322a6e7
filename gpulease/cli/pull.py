"""``gpulease pull STACK [PREFIX ...]``: download results from the stack's bucket (default ``final/`` and
``logs/``) with a progress bar; files already here with the same size are skipped."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from gpulease.cli.conventions import print_json
from gpulease.transfer.run import DEFAULT_PULL_PREFIXES, add_location_options, located, pull, store_for


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("pull", help="download results (final/, logs/) from a stack's bucket, with progress")
    p.add_argument("stack", help="a stack name in stacks/ or a stack file")
    p.add_argument("prefixes", nargs="*", metavar="PREFIX",
                   help=f"folders in the bucket (default {' '.join(DEFAULT_PULL_PREFIXES)})")
    p.add_argument("--dest", type=Path, help="the local folder (default ./<stack>)")
    add_location_options(p)
    p.add_argument("--json", action="store_true", help="machine-readable output, no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    where = located(args)
    prefixes = [p if p.endswith("/") else f"{p}/" for p in args.prefixes] or list(DEFAULT_PULL_PREFIXES)
    dest = args.dest or Path(where.stack)
    result = pull(where, store_for(where, args.profile), prefixes, dest, console, bar=not args.json)
    if args.json:
        print_json("pull", result, ok=True, legacy=result)
    else:
        console.print(f"{where.bucket} (found by {where.found_by}): received {len(result['received'])}, "
                      f"already here {len(result['skipped'])}, into {result['dest']}")
    return 0
