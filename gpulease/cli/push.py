"""``gpulease push STACK PATH [--to data/]``: upload local files that exist nowhere else to the stack's bucket
(multipart, a progress bar, files already there skipped; see docs/workflow.md). Stage public data on the server
with ``data.sources`` instead: the platform's bandwidth, not your uplink."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from gpulease.cli.conventions import print_json
from gpulease.cli.shown import shown
from gpulease.cli.stack_arg import stack_type
from gpulease.core.errors import UserError
from gpulease.transfer.files import DEFAULT_CHECKPOINT_PREFIX, key_prefix
from gpulease.transfer.run import add_location_options, located, push, store_for


def checkpoint_prefixes(target: str) -> tuple[str, ...]:
    """The checkpoint prefixes of the stack's experiments (the default one too): push never writes there."""
    from gpulease.review import stacks

    found = {DEFAULT_CHECKPOINT_PREFIX}
    try:
        [(_, stack_file)] = stacks.resolve(target)
        config = stacks.load_stack_config(stack_file)
    except (ValueError, UserError):
        return tuple(found)  # the lookup that follows names what is wrong with the stack
    # Where a stack file says it: gpulease:experiment.checkpoints, a sweep's base and each run's overrides.
    experiment = config.get("gpulease:experiment")
    sweep = config.get("gpulease:sweep")
    sections = [experiment] if isinstance(experiment, dict) else []
    if isinstance(sweep, dict):
        sections.append(sweep.get("base"))
        sections += [run.get("overrides") for run in sweep.get("runs") or [] if isinstance(run, dict)]
    for section in sections:
        checkpoints = section.get("checkpoints") if isinstance(section, dict) else None
        prefix = checkpoints.get("prefix") if isinstance(checkpoints, dict) else None
        if isinstance(prefix, str) and prefix.strip("/"):
            found.add(prefix.strip("/") + "/")
    return tuple(sorted(found))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("push", help="upload local files to a stack's bucket (multipart, resumable, with progress)")
    p.add_argument("stack", type=stack_type(), help="a stack name in stacks/ or a stack file")
    p.add_argument("path", type=Path, help="a file or a folder (sent recursively)")
    p.add_argument("--to", default="data/", help="the folder in the bucket (default data/)")
    add_location_options(p)
    p.add_argument("--json", action="store_true", help="machine-readable output, no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    reserved = checkpoint_prefixes(args.stack)
    key_prefix(args.to, reserved)  # a refused --to costs no lookup and no credentials
    where = located(args)
    result = push(where, store_for(where, args.profile), args.path, args.to, console, bar=not args.json,
                  reserved=reserved)
    if args.json:
        print_json("push", result, ok=True, legacy=result)
    else:
        console.print(f"{shown(where.bucket)} (found by {shown(where.found_by)}): sent {len(result['sent'])}, "
                      f"already there {len(result['skipped'])}, under {shown(result['uri'])}")
    return 0
