"""``gpulease plan``: review stacks offline: resources, policy verdicts and cost, without credentials or CLI.

Exit codes: 0 clean (advisory findings allowed), 1 mandatory policy violations, 2 bad input (unknown stack,
invalid spec or program error, invalid policy config).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

from gpulease.core.errors import UserError
from gpulease.review import report as plan_report
from gpulease.review.engine import exit_code, review
from gpulease.review.policy_runner import load_policy_config


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plan",
        help="review what stacks would create, with policy verdicts and cost, offline (no credentials, no Pulumi CLI)",
        description="Run each stack's program under mocks, check it with the gpulease-guardrails policy pack and "
        "estimate its cost. Exit 0 when clean (advisories allowed), 1 on mandatory violations, 2 on bad input.",
    )
    p.add_argument(
        "stacks",
        nargs="+",
        help="stack names in stacks/, Pulumi.<stack>.yaml files, or Pulumi Python project directories (every stack)",
    )
    p.add_argument("--format", choices=("table", "markdown", "json"), default="table",
                   help="table: terminal report; markdown: pull-request comment; json: everything, machine-readable")
    p.add_argument("--policy-config", type=Path, metavar="FILE",
                   help="policy config JSON, the same file `pulumi preview --policy-pack-config` takes")
    p.add_argument("--output", type=Path, metavar="FILE", help="write the report to FILE instead of stdout")
    p.set_defaults(func=run)


class OutputPathError(UserError):
    """``--output`` names a place a report cannot be written."""


def check_output(path: Path) -> None:
    """Refuse an ``--output`` that cannot be written before any stack is rendered (one line, exit 2)."""
    accepted = "a file path in an existing folder, e.g. plan.md"
    if path.is_dir():
        raise OutputPathError(f"--output {path}: is a folder; accepted: {accepted}")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise OutputPathError(f"--output {path}: the folder {parent} does not exist; accepted: {accepted}")


def run(args: argparse.Namespace) -> int:
    if args.output:
        check_output(args.output)
    config = load_policy_config(args.policy_config) if args.policy_config else None
    reviews = review(args.stacks, policy_config=config)
    if args.format == "table":
        # Imported for the table only: rich is about a tenth of plan's start-up beyond the SDK it needs anyway.
        from rich.console import Console

        from gpulease.review.terminal import print_terminal

        buffer = io.StringIO()
        print_terminal(reviews, Console(file=buffer, width=160) if args.output else Console())
        text = buffer.getvalue()
    else:
        text = (
            plan_report.markdown(reviews)
            if args.format == "markdown"
            else json.dumps(plan_report.to_json(reviews), indent=2, default=str) + "\n"
        )
    if args.output:
        try:
            args.output.write_text(text)
        except OSError as exc:
            raise OutputPathError(f"--output {args.output}: cannot be written ({exc.strerror or exc})") from None
    elif args.format != "table":
        sys.stdout.write(text)
    return exit_code(reviews)
