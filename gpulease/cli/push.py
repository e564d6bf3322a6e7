"""``gpulease push STACK PATH [--to data/]``: upload local files that exist nowhere else to the stack's bucket
(multipart, a progress bar, files already there skipped; see docs/workflow.md). Stage public data on the server
with ``data.sources`` instead: the platform's bandwidth, not your uplink."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console

from gpulease.transfer.run import add_location_options, located, push, store_for


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("push", help="upload local files to a stack's bucket (multipart, resumable, with progress)")
    p.add_argument("stack", help="a stack name in stacks/ or a stack file")
    p.add_argument("path", type=Path, help="a file or a folder (sent recursively)")
    p.add_argument("--to", default="data/", help="the folder in the bucket (default data/)")
    add_location_options(p)
    p.add_argument("--json", action="store_true", help="machine-readable output, no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    where = located(args)
    result = push(where, store_for(where, args.profile), args.path, args.to, console, bar=not args.json)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        console.print(f"{where.bucket} (found by {where.found_by}): sent {len(result['sent'])}, "
                      f"already there {len(result['skipped'])}, under {result['uri']}")
    return 0
