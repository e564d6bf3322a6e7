"""``gpulease plan``: review stacks offline: resources, policy verdicts and cost, without credentials or CLI.

Exit codes: 0 clean (advisory findings allowed), 1 mandatory policy violations, 2 bad input (unknown stack,
invalid spec or program error, invalid policy config).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console

from gpulease import plan_report
from gpulease.policy_runner import load_policy_config
from gpulease.review import exit_code, review


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


def run(args: argparse.Namespace) -> int:
    config = load_policy_config(args.policy_config) if args.policy_config else None
    reviews = review(args.stacks, policy_config=config)
    if args.format == "table":
        if args.output:
            with args.output.open("w") as handle:
                plan_report.print_terminal(reviews, Console(file=handle, width=160))
        else:
            plan_report.print_terminal(reviews, Console())
    else:
        text = (
            plan_report.markdown(reviews)
            if args.format == "markdown"
            else json.dumps(plan_report.to_json(reviews), indent=2, default=str) + "\n"
        )
        if args.output:
            args.output.write_text(text)
        else:
            sys.stdout.write(text)
    return exit_code(reviews)
