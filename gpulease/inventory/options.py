"""Command-line options shared by ``gpulease ls`` and ``gpulease reap``, checked before any client exists.

Every number is checked to be finite and in range here (argparse's ``float`` accepts ``nan`` and ``inf``), and
every region against the form both clouds use, so a mistake is one line naming the option (exit 2) instead of
an SDK traceback.
"""

from __future__ import annotations

import argparse
import math
import re
from typing import Any

from rich.console import Console

from gpulease.core.errors import UserError
from gpulease.core.flag_numbers import number
from gpulease.core.terminal import Trimmed, piped_width
from gpulease.inventory.aws import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_READ_TIMEOUT,
    DEFAULT_RETRY_MODE,
    REGIONS_ENV,
    RETRY_MODES,
    AwsClients,
    split_list,
)

CLOUDS = ("aws", "alicloud")
# us-east-1, eu-central-1, cn-hangzhou, ap-southeast-1, cn-shanghai-finance-1: lower-case words joined by dashes.
REGION_PATTERN = re.compile(r"^[a-z]{2,}(?:-[a-z0-9]+)+\Z")
MAX_ATTEMPTS_RANGE = (1, 20)
TIMEOUT_RANGE = (0.1, 600.0)


class InventoryOptionError(UserError):
    """An option of ``ls`` or ``reap`` outside what is accepted."""


def add_cloud_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cloud", choices=CLOUDS, default="aws", help="the cloud to look at (default: %(default)s)")
    p.add_argument(
        "--region",
        action="append",
        metavar="REGION",
        help=f"region to look at (repeatable or comma-separated; default: ${REGIONS_ENV})",
    )
    p.add_argument(
        "--profile",
        help="credentials profile: AWS (~/.aws/config) or Alibaba Cloud CLI (~/.aliyun/config.json); "
        "default: the standard credential chain",
    )
    p.add_argument("--retry-mode", choices=RETRY_MODES, default=DEFAULT_RETRY_MODE, help="botocore retry mode (AWS)")
    p.add_argument(
        "--max-attempts",
        type=number("a number of attempts", *MAX_ATTEMPTS_RANGE, whole=True, example=str(DEFAULT_MAX_ATTEMPTS)),
        default=DEFAULT_MAX_ATTEMPTS,
        help="attempts per call, the first one included (default: %(default)s)",
    )
    p.add_argument(
        "--connect-timeout",
        type=number("a number of seconds", *TIMEOUT_RANGE, example=f"{DEFAULT_CONNECT_TIMEOUT:g}"),
        default=DEFAULT_CONNECT_TIMEOUT,
        metavar="SECONDS",
        help="per attempt (default: %(default)g)",
    )
    p.add_argument(
        "--read-timeout",
        type=number("a number of seconds", *TIMEOUT_RANGE, example=f"{DEFAULT_READ_TIMEOUT:g}"),
        default=DEFAULT_READ_TIMEOUT,
        metavar="SECONDS",
        help="per attempt (default: %(default)g)",
    )
    p.add_argument("--json", dest="format", action="store_const", const="json", help="print JSON instead of a table")
    p.add_argument("--format", choices=("table", "json"), default="table")


def in_range(option: str, value: float, low: float, high: float) -> float:
    """``value`` when finite and within [low, high]; else one error naming the option."""
    if not math.isfinite(value) or not low <= value <= high:
        raise InventoryOptionError(f"{option} must be a number from {low:g} to {high:g}, got {value!r}")
    return value


def check_common(args: argparse.Namespace) -> None:
    in_range("--max-attempts", args.max_attempts, *MAX_ATTEMPTS_RANGE)
    in_range("--connect-timeout", args.connect_timeout, *TIMEOUT_RANGE)
    in_range("--read-timeout", args.read_timeout, *TIMEOUT_RANGE)


def resolve_regions(values: list[str] | None) -> list[str]:
    """The regions asked for, each of the accepted form; no region at all is refused (never "all regions")."""
    regions = split_list(values, REGIONS_ENV)
    if not regions:
        raise InventoryOptionError(
            f"no region given: pass --region REGION (repeatable) or set {REGIONS_ENV}=us-east-1,us-west-2"
        )
    bad = [r for r in regions if not REGION_PATTERN.match(r)]
    if bad:
        raise InventoryOptionError(
            f"--region {bad[0]!r} is not a region name; accepted: lower-case words joined by dashes, "
            "e.g. us-east-1 (AWS) or cn-hangzhou (Alibaba Cloud)"
        )
    return regions


def clients_from_args(args: argparse.Namespace) -> Any:
    """The cloud's client factory, configured from the options (checked first)."""
    check_common(args)
    # One pooled connection per concurrent call, so that workers never wait on the pool.
    pool = max(16, getattr(args, "workers", 0) + 4)
    if args.cloud == "alicloud":
        from gpulease.inventory.alicloud_clients import AlicloudClients

        return AlicloudClients(
            profile=args.profile,
            max_attempts=args.max_attempts,
            connect_timeout=args.connect_timeout,
            read_timeout=args.read_timeout,
        )
    return AwsClients(
        profile=args.profile,
        retry_mode=args.retry_mode,
        max_attempts=args.max_attempts,
        connect_timeout=args.connect_timeout,
        read_timeout=args.read_timeout,
        max_pool_connections=pool,
        freeze_models=True,
    )


def output_console() -> Console:
    """The terminal's width on a terminal; piped, ``COLUMNS`` when set, else wide, unwrapped lines in a log (cron,
    CI) so ids stay greppable; no line ends in spaces."""
    console = Console(file=Trimmed())
    return console if console.is_terminal else Console(file=Trimmed(), width=piped_width(240))
