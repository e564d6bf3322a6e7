"""Command-line options shared by ``gpulease ls`` and ``gpulease reap``."""

from __future__ import annotations

import argparse

from rich.console import Console

from gpulease.inventory.aws import DEFAULT_MAX_ATTEMPTS, DEFAULT_RETRY_MODE, REGIONS_ENV, RETRY_MODES, AwsClients


def add_aws_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--region",
        action="append",
        metavar="REGION",
        help=f"AWS region to look at (repeatable or comma-separated; default: ${REGIONS_ENV})",
    )
    p.add_argument("--profile", help="AWS profile (default: the standard credential chain)")
    p.add_argument("--retry-mode", choices=RETRY_MODES, default=DEFAULT_RETRY_MODE, help="botocore retry mode")
    p.add_argument(
        "--max-attempts", type=int, default=DEFAULT_MAX_ATTEMPTS, help="attempts per call, first one included"
    )
    p.add_argument("--json", dest="format", action="store_const", const="json", help="print JSON instead of a table")
    p.add_argument("--format", choices=("table", "json"), default="table")


def clients_from_args(args: argparse.Namespace) -> AwsClients:
    # One pooled connection per concurrent call, so that workers never wait on the pool.
    pool = max(16, getattr(args, "workers", 0) + 4)
    return AwsClients(
        profile=args.profile, retry_mode=args.retry_mode, max_attempts=args.max_attempts, max_pool_connections=pool
    )


def output_console() -> Console:
    """The terminal's width on a terminal; wide, unwrapped lines in a log (cron, CI) so ids stay greppable."""
    console = Console()
    return console if console.is_terminal else Console(width=240)
