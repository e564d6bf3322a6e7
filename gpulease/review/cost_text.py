"""The cost as the reports print it: dollars, and hourly figures that are unknown while compute is unpriced.

An instance-hours line with no price adds nothing to the hourly sums; printed, those sums would read $0.00 (or
too little) for compute that costs money. While any compute line is unpriced, or the review is partial (what the
program registers after its failure is not summed), every format says the hourly cost is unknown and why (JSON: ``hourlyUsd`` / ``maxHourlyUsd`` null, ``hourlyKnown`` false,
``hourlyReason``).
"""

from __future__ import annotations

from typing import Any

from gpulease.core.cost import StackCost
from gpulease.review.jsonkeys import camel_keys


def usd(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}"


def unpriced_compute(cost: StackCost) -> str | None:
    """What compute has no hourly price (None when every instance line is priced): the hourly figures are then
    unknown, never the $0.00 the unpriced lines would add."""
    items = [f"{line.resource}: {line.item}" for line in cost.lines if line.compute and line.hourly_usd is None]
    return "; ".join(items) or None


def hourly_unknown(cost: StackCost) -> str | None:
    """Why the hourly figures are unknown (a partial review, unpriced compute); None when they are known."""
    missing = unpriced_compute(cost)
    reasons = [cost.hourly_unknown, f"unpriced compute: {missing}" if missing else None]
    return "; ".join(r for r in reasons if r) or None


def hourly(cost: StackCost) -> str:
    """The stack's hourly cost while running, or ``unknown (<why>)``."""
    why = hourly_unknown(cost)
    return f"unknown ({why})" if why else f"{usd(cost.hourly_usd)}/h"


def cost_json(cost: StackCost) -> dict[str, Any]:
    """The cost's JSON: hourly figures ``null`` with ``hourlyReason`` while they are unknown."""
    out = camel_keys(cost.as_dict())
    out.pop("hourlyUnknown", None)
    missing = hourly_unknown(cost)
    out["hourlyKnown"] = missing is None
    out["hourlyReason"] = missing
    if missing:
        out["hourlyUsd"] = out["maxHourlyUsd"] = None
    return out
