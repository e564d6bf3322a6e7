"""What several commands share: a console that does not squeeze tables, catalog override files given on the command
line, and how ``cost`` and ``size`` name the date of their prices and warn about stale ones."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from rich.console import Console

from gpulease.cli.conventions import PIPED_WIDTH, piped_width
from gpulease.core.catalog import OVERRIDES_ENV, load_catalog
from gpulease.core.catalog.freshness import (
    DEFAULT_MAX_PRICE_AGE_DAYS,
    REFRESH_HINT,
    DatedPrice,
    brief_stale,
    today_of,
)
from gpulease.core.flag_numbers import number
from gpulease.core.terminal import Trimmed

MAX_AGE_OPTION = "--max-price-age"


_age = number("a number of days", 0, 3650, example="30")


def add_max_age_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        MAX_AGE_OPTION, type=_age, default=DEFAULT_MAX_PRICE_AGE_DAYS, metavar="DAYS",
        help=f"warn about prices older than this many days (default {DEFAULT_MAX_PRICE_AGE_DAYS})",
    )


def stale_warning(found: list[DatedPrice], now: datetime, max_age_days: float) -> str | None:
    """One line for the terminal, or None when every price is fresh enough."""
    if not found:
        return None
    return f"{brief_stale(found, now, max_age_days)}; {REFRESH_HINT}"


def stale_json(found: list[DatedPrice], now: datetime) -> list[dict[str, Any]]:
    today = today_of(now)
    # An undated price (an override without asOf): no date and no age, rather than the placeholder date.
    return [{"price": p.what, "asOf": None if p.undated else p.as_of.isoformat(), "ageDays": p.age_days(today)}
            for p in found]


def report_console(default_width: int = PIPED_WIDTH) -> Console:
    """The console of a command's report: the terminal's width on a terminal; piped, ``COLUMNS`` when set (the
    width the reader asked for), else wide enough for the tables; no line ends in spaces (``Trimmed``)."""
    console = Console(file=Trimmed())
    return console if console.is_terminal else Console(file=Trimmed(), width=piped_width(default_width))


def wide_console() -> Console:
    """A console that does not squeeze wide tables into 80 columns when the output is piped or captured (unless
    ``COLUMNS`` asks for that width)."""
    return report_console()


@contextmanager
def catalog_overrides(files: list[str] | None) -> Iterator[None]:
    """Make ``--catalog`` files visible to everything that loads the catalog meanwhile (the program too)."""
    previous = os.environ.get(OVERRIDES_ENV)
    if files:
        existing = [p for p in (previous or "").split(os.pathsep) if p]
        os.environ[OVERRIDES_ENV] = os.pathsep.join([*existing, *files])
    try:
        if files:
            # Read them once up front: a bad override file is the command's one-line error (exit 2), not a
            # failure of every stack that happens to resolve a type through the catalog.
            load_catalog()
        yield
    finally:
        if previous is None:
            os.environ.pop(OVERRIDES_ENV, None)
        else:
            os.environ[OVERRIDES_ENV] = previous
