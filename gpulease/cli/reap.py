"""``gpulease reap``: sweep managed resources (AWS or Alibaba Cloud) that outlived their deadline. Dry run unless
``--execute``."""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta

from rich.console import Console
from rich.table import Table

from gpulease.cli.conventions import error_entry, print_json
from gpulease.cli.shown import shown
from gpulease.core import clock
from gpulease.core.flag_numbers import number
from gpulease.inventory import aws
from gpulease.inventory.acting import FAILED, KEPT, SweepReport
from gpulease.inventory.aws import ALLOWED_ACCOUNTS_ENV, split_list
from gpulease.inventory.decide import DEFAULT_GRACE, DEFAULT_SNAPSHOT_RETENTION, ReapSettings
from gpulease.inventory.options import (
    InventoryOptionError,
    add_cloud_options,
    clients_from_args,
    in_range,
    output_console,
    resolve_regions,
)

MAX_GRACE_MINUTES = 60 * 24 * 365
MAX_RETENTION_DAYS = 3650

STATUS_STYLE = {"done": "green", "would": "yellow", "failed": "bold red", "gone": "dim", KEPT: ""}


ReapOptionError = InventoryOptionError


class SweepUnavailableError(Exception):
    """The sweep could not start: the account check failed at the service (not the user's input)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "reap",
        help="sweep managed resources past their deadline, --cloud aws|alicloud (dry run unless --execute)",
        description="Terminate (AWS) or release (Alibaba Cloud) expired managed instances (and cancel their spot "
        "requests), release unassociated expired Elastic IPs / EIPs, delete unattached expired volumes / disks "
        "tagged retain=false, and snapshots and custom images past retention. Only resources tagged "
        "gpulease:managed-by=gpulease are ever touched.",
    )
    add_cloud_options(p)
    p.add_argument("--execute", action="store_true", help="act; without it the sweep only reports what it would do")
    p.add_argument(
        "--grace-minutes",
        type=number("a number of minutes", 0, 7 * 24 * 60, example="60"),
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
        type=number("a number of days", 1, 3650, whole=True, example="30"),
        default=DEFAULT_SNAPSHOT_RETENTION.days,
        help="days a managed snapshot is kept when it has no retain-until tag (default: %(default)s)",
    )
    p.add_argument("--workers", type=number("a number of workers", 1, 64, whole=True, example="8"), default=8, help="concurrent single-resource calls per region")
    p.add_argument("--show-kept", action="store_true", help="list kept resources in the table too")
    p.set_defaults(func=run)


def settings_from_args(args: argparse.Namespace) -> ReapSettings:
    in_range("--grace-minutes", args.grace_minutes, 0, MAX_GRACE_MINUTES)
    in_range("--snapshot-retention-days", args.snapshot_retention_days, 1, MAX_RETENTION_DAYS)
    in_range("--workers", args.workers, 1, 64)
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
    title = f"gpulease reap ({report.cloud}): account {report.account}, {', '.join(report.regions)}; {mode}"
    table = Table(title=shown(title))
    for column in ("region", "kind", "id", "action", "status", "why", "detail"):
        table.add_column(column)
    order = {FAILED: 0, "done": 1, "would": 1, "gone": 2, KEPT: 3}
    for o in sorted(report.outcomes, key=lambda o: (order.get(o.status, 9), o.region, o.kind, o.id)):
        if o.status == KEPT and not show_kept:
            continue
        style = STATUS_STYLE.get(o.status, "")
        status = f"[{style}]{shown(o.status)}[/{style}]" if style else shown(o.status)
        table.add_row(shown(o.region), shown(o.kind), shown(o.id), shown(o.action), status, shown(o.reason),
                      shown(o.detail))
    console.print(table)
    counts = ", ".join(f"{n} {status}" for status, n in sorted(report.counts().items())) or "nothing managed found"
    console.print(shown(counts))
    for error in report.errors:
        console.print(f"[bold red]error:[/bold red] {shown(error)}")


def run_sweep(args: argparse.Namespace, regions: list[str], settings: ReapSettings, allowed: list[str]) -> SweepReport:
    """The cloud's sweep; credential problems become one user error, a failed account check ``SweepUnavailableError``."""
    clients = clients_from_args(args)
    if args.cloud == "alicloud":
        from gpulease.inventory import alicloud_reaper
        from gpulease.inventory.alicloud_errors import SDK_ERRORS, error_text

        try:
            return alicloud_reaper.sweep(clients, regions, settings, allowed)
        except SDK_ERRORS as exc:
            raise SweepUnavailableError(f"reading the account (STS GetCallerIdentity) failed: {error_text(exc)}") from None
    from botocore.exceptions import BotoCoreError, ClientError

    from gpulease.inventory import reaper

    try:
        return reaper.sweep(clients, regions, settings, allowed)
    except aws.CREDENTIAL_ERRORS as exc:
        raise aws.credentials_problem(exc) from None
    except (BotoCoreError, ClientError) as exc:
        raise SweepUnavailableError(f"reading the account (STS GetCallerIdentity) failed: {exc}") from None


def run(args: argparse.Namespace) -> int:
    regions = resolve_regions(args.region)
    settings = settings_from_args(args)
    allowed = split_list(args.allowed_account, ALLOWED_ACCOUNTS_ENV)
    try:
        report = run_sweep(args, regions, settings, allowed)
    except SweepUnavailableError as exc:
        print(f"gpulease reap: {exc}; nothing was changed", file=sys.stderr)
        if args.format == "json":
            print_json("reap", None, ok=False, errors=[error_entry("sweep-unavailable", f"{exc}; nothing was changed")])
        return 1
    if args.format == "json":
        print_json("reap", report.as_dict(), ok=not report.failed, legacy=report.as_dict(),
                   errors=[error_entry("action-failed", "some actions or listings failed; see data")]
                   if report.failed else [])
    else:
        print_report(report, output_console(), show_kept=args.show_kept)
    if report.failed:
        print("gpulease reap: some actions or listings failed; see the report", file=sys.stderr)
        return 1
    return 0
