"""How ``cost`` and ``size`` name the date of their prices and warn about stale ones."""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import Any

from gpulease.core.catalog.freshness import (
    DEFAULT_MAX_PRICE_AGE_DAYS,
    REFRESH_HINT,
    DatedPrice,
    describe_stale,
    today_of,
)

MAX_AGE_OPTION = "--max-price-age"


def _age(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of days, e.g. 30") from None
    if not 0 <= value <= 3650:
        raise argparse.ArgumentTypeError(f"{text} days is outside 0-3650")
    return value


def add_max_age_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        MAX_AGE_OPTION, type=_age, default=DEFAULT_MAX_PRICE_AGE_DAYS, metavar="DAYS",
        help=f"warn about prices older than this many days (default {DEFAULT_MAX_PRICE_AGE_DAYS})",
    )


def stale_warning(found: list[DatedPrice], now: datetime, max_age_days: float) -> str | None:
    """One line for the terminal, or None when every price is fresh enough."""
    if not found:
        return None
    return f"stale prices: {describe_stale(found, now, max_age_days)}; {REFRESH_HINT}"


def stale_json(found: list[DatedPrice], now: datetime) -> list[dict[str, Any]]:
    today = today_of(now)
    return [{"price": p.what, "asOf": p.as_of.isoformat(), "ageDays": p.age_days(today)} for p in found]
