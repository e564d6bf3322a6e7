"""``gpulease reap``: sweep managed AWS resources that outlived their deadline. Dry run unless ``--execute``."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import timedelta

from rich.console import Console
from rich.table import Table

from components import clock
from components.errors import UserError
from gpulease.inventory.aws import ALLOWED_ACCOUNTS_ENV, resolve_regions, split_list
from gpulease.inventory.options import add_aws_options, clients_from_args, output_console
from gpulease.inventory.reaper import (
    DEFAULT_GRACE,
    DEFAULT_SNAPSHOT_RETENTION,
    FAILED,
    KEPT,
    ReapSettings,
    SweepReport,
    sweep,
)

STATUS_STYLE = {"done": "green", "would": "yellow", "failed": "bold red", "gone": "dim", KEPT: ""}


class ReapOptionError(UserError):
    """A reap option outside what is accepted."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "reap",
        help="sweep managed AWS resources past their deadline (dry run unless --execute)",
        description="Terminate expired managed instances (and cancel their spot requests), release unassociated "
        "expired Elastic IPs, delete unattached expired volumes tagged retain=false and snapshots past retention. "
        "Only resources tagged gpulease:managed-by=gpulease are ever touched.",
    )
    add_aws_options(p)
    p.add_argument("--execute", action="store_true", help="act; without it the sweep only reports what it would do")
    p.add_argument(
        "--grace-minutes",
        type=float,
        default=DEFAULT_GRACE.total_seconds() / 60,
        help="minutes past expires-at before a resource is swept (default: %(default)g)",
    )
    p.add_argument(
        "--allowed-account",
        action="append",
        metavar="ACCOUNT_ID",
        help=f"refuse any other account (repeatable; default: ${ALLOWED_ACCOUNTS_ENV}, comma-separated)",
    )
    p.add_argument(
        "--snapshot-before-delete",
        action="store_true",
        help="take a final snapshot of each volume before deleting it (kept for --snapshot-retention-days)",
    )
    p.add_argument(
        "--snapshot-retention-days",
        type=int,
        default=DEFAULT_SNAPSHOT_RETENTION.days,
        help="days a managed snapshot is kept when it has no retain-until tag (default: %(default)s)",
    )
    p.add_argument("--workers", type=int, default=8, help="concurrent single-resource calls per region")
    p.add_argument("--show-kept", action="store_true", help="list kept resources in the table too")
    p.set_defaults(func=run)


def settings_from_args(args: argparse.Namespace) -> ReapSettings:
    if args.grace_minutes < 0:
        raise ReapOptionError(f"--grace-minutes must be 0 or more, got {args.grace_minutes:g}")
    if args.snapshot_retention_days < 1:
        raise ReapOptionError(f"--snapshot-retention-days must be 1 or more, got {args.snapshot_retention_days}")
    if not 1 <= args.workers <= 64:
        raise ReapOptionError(f"--workers must be between 1 and 64, got {args.workers}")
    return ReapSettings(
        now=clock.utcnow(),
        grace=timedelta(minutes=args.grace_minutes),
        snapshot_before_delete=args.snapshot_before_delete,
        snapshot_retention=timedelta(days=args.snapshot_retention_days),
        execute=args.execute,
        workers=args.workers,
    )


def print_report(report: SweepReport, console: Console, *, show_kept: bool) -> None:
    mode = "executed" if report.executed else "dry run (pass --execute to act)"
    table = Table(title=f"gpulease reap: account {report.account}, {', '.join(report.regions)}; {mode}")
    for column in ("region", "kind", "id", "action", "status", "why", "detail"):
        table.add_column(column)
    order = {FAILED: 0, "done": 1, "would": 1, "gone": 2, KEPT: 3}
    for o in sorted(report.outcomes, key=lambda o: (order.get(o.status, 9), o.region, o.kind, o.id)):
        if o.status == KEPT and not show_kept:
            continue
        style = STATUS_STYLE.get(o.status, "")
        status = f"[{style}]{o.status}[/{style}]" if style else o.status
        table.add_row(o.region, o.kind, o.id, o.action, status, o.reason, o.detail)
    console.print(table)
    counts = ", ".join(f"{n} {status}" for status, n in sorted(report.counts().items())) or "nothing managed found"
    console.print(f"{counts}")
    for error in report.errors:
        console.print(f"[bold red]error:[/bold red] {error}")


def run(args: argparse.Namespace) -> int:
    regions = resolve_regions(args.region)
    settings = settings_from_args(args)
    allowed = split_list(args.allowed_account, ALLOWED_ACCOUNTS_ENV)
    report = sweep(clients_from_args(args), regions, settings, allowed)
    if args.format == "json":
        print(json.dumps(report.as_dict(), indent=2, sort_keys=True))
    else:
        print_report(report, output_console(), show_kept=args.show_kept)
    if report.failed:
        print("gpulease reap: some actions or listings failed; see the report", file=sys.stderr)
        return 1
    return 0
