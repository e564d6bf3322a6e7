"""How old the prices behind a figure are, and how the reports name the catalog they came from.

Every cost figure carries the date of the prices it used (``CostLine.price_as_of`` and ``cap_as_of``); a price
older than the maximum age (``DEFAULT_MAX_PRICE_AGE_DAYS``, configurable per command and in the policy config)
is reported as stale. A price an override gave without a date (``models.UNDATED``) has an unknown age: it is
reported with the stale ones, as ``undated``, whatever the maximum age. The shipped catalog stays the offline default, so its date is named in every output, with
the override files read on top of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING

from gpulease.core.catalog.undated import UNDATED, date_label

if TYPE_CHECKING:
    from gpulease.core.catalog.models import Catalog

DEFAULT_MAX_PRICE_AGE_DAYS = 30
"""Spot prices move by the hour and list prices every few months; a month-old number is a reasonable bound."""
REFRESH_HINT = ("`gpulease catalog refresh` writes fresh ones to your catalog folder, where every command reads "
                "them (docs/config.md#price-catalog)")


@dataclass(frozen=True)
class DatedPrice:
    """One price a figure used: what it is, and its date."""

    what: str
    as_of: date

    @property
    def undated(self) -> bool:
        return self.as_of == UNDATED

    def age_days(self, today: date) -> int | None:
        """Days since the price was read; None when its age is unknown (undated)."""
        return None if self.undated else (today - self.as_of).days


def to_date(value: str | date | None) -> date | None:
    if value is None or isinstance(value, date):
        return value
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


def today_of(now: datetime | date) -> date:
    return now.date() if isinstance(now, datetime) else now


def stale(prices: Iterable[DatedPrice], now: datetime | date, max_age_days: float) -> list[DatedPrice]:
    """The prices older than ``max_age_days`` at ``now``, and the undated ones (unknown age: never counted as
    fresh), oldest (undated) first, each named once."""
    today = today_of(now)
    found: dict[tuple[str, date], DatedPrice] = {}
    for price in prices:
        age = price.age_days(today)
        if age is None or age > max_age_days:
            found.setdefault((price.what, price.as_of), price)
    return sorted(found.values(), key=lambda p: (p.as_of, p.what))


def describe_stale(found: list[DatedPrice], now: datetime | date, max_age_days: float, *, limit: int = 8) -> str:
    """``older than 30 days: 2025-06-01 (547 days old): g6.xlarge on-demand in us-east-1, ...`` — grouped by date,
    oldest first, ``limit`` prices named."""
    today = today_of(now)
    groups: dict[date, list[str]] = {}
    for price in found[:limit]:
        groups.setdefault(price.as_of, []).append(price.what)
    parts = [f"{_age_text(when, today)}: {', '.join(names)}" for when, names in groups.items()]
    more = f"; and {len(found) - limit} more" if len(found) > limit else ""
    undated = " or undated" if any(p.undated for p in found) else ""
    return f"older than {max_age_days:g} days{undated}: {'; '.join(parts)}{more}"


def brief_stale(found: list[DatedPrice], now: datetime | date, max_age_days: float) -> str:
    """``stale prices up to 548 days old (2025-06-01; 12 prices older than 30 days)``, and ``1 undated price (age
    unknown: an override row without asOf)``: how old, once, briefly."""
    today = today_of(now)
    undated = sum(p.undated for p in found)
    dated = [p for p in found if not p.undated]
    parts = []
    if dated:
        oldest = min(dated, key=lambda p: p.as_of)
        parts.append(f"stale prices up to {oldest.age_days(today)} days old ({oldest.as_of.isoformat()}; {len(dated)} "
                     f"price{'s' if len(dated) != 1 else ''} older than {max_age_days:g} days)")
    if undated:
        parts.append(f"{undated} undated price{'s' if undated != 1 else ''} (age unknown: an override row without "
                     "asOf)")
    return " and ".join(parts)


def _age_text(when: date, today: date) -> str:
    return f"{date_label(when)} (age unknown)" if when == UNDATED else f"{when.isoformat()} ({(today - when).days} days old)"


def shipped_as_of() -> str:
    """The oldest price date of the shipped catalog alone (the offline default)."""
    from gpulease.core.catalog.loader import load_catalog  # on first use: see the package's docstring

    return load_catalog(overrides=()).as_of


def describe_catalog(catalog: Catalog) -> str:
    """``shipped catalog of 2025-06-01`` plus ``, overrides: prices.yaml`` when override files were read."""
    from gpulease.core.catalog.loader import BASE_FILES

    overrides = catalog.files[len(BASE_FILES):]
    text = f"shipped catalog of {shipped_as_of()}"
    return text + (f", overrides: {', '.join(overrides)}" if overrides else "")


def line_prices(lines: Iterable[object], region: str | None) -> list[DatedPrice]:
    """The dated prices behind cost lines (``gpulease.core.cost.CostLine``): each line's rate, and the on-demand cap of a
    spot line priced at its current spot price."""
    found = []
    for line in lines:
        item = str(getattr(line, "item", ""))
        # Each line was priced in its own provider's region (a stack may use both clouds); ``region`` for a line
        # that does not say.
        here = getattr(line, "region", None) or region
        where = f" in {here}" if here else ""
        if (when := to_date(getattr(line, "price_as_of", None))) is not None:
            found.append(DatedPrice(f"{item}{where}", when))
        if (cap := to_date(getattr(line, "cap_as_of", None))) is not None:
            found.append(DatedPrice(f"{item.split(' ')[0]} on-demand cap{where}", cap))
    return found
