"""The cost as the reports print it: dollars, and every figure that includes an unpriced item said to be unknown.

An item with no price adds nothing to a sum; printed, the sum would read $0.00 (or too little) for something that
costs money. The cost model gives each figure of the stack and of each experiment a reason when it is only a lower
bound (``gpulease.core.cost.lines.Known``: an unpriced instance type or resource type, a group of unknown size, no
runtime, a partial review); every format then says so: JSON ``null`` with ``<figure>Known`` false and
``<figure>Reason`` (``StackCost.as_dict``), the terminal, text and markdown ``unknown`` or ``at least $X, unknown
because ...``.
"""

from __future__ import annotations

from typing import Any

from gpulease.core import money
from gpulease.core.cost import StackCost
from gpulease.review.jsonkeys import camel_keys


def usd(value: float | None) -> str:
    return money.usd(value, "n/a")


def rate(value: float | None) -> str:
    return money.usd_per_hour(value, "n/a")


def monthly(value: float | None) -> str:
    return money.usd_per_month(value, "n/a")


def hourly_unknown(cost: Any) -> str | None:
    """Why the hourly figures are unknown (a partial review, an unpriced item); None when they are known."""
    return cost.hourly_reason


def bounded(value: float, reason: str | None, text: str) -> str:
    """``text`` (the figure as printed) when it is known; else ``unknown because <reason>``, with the priced part
    as ``at least <text>`` when it is more than zero."""
    if reason is None:
        return text
    return f"at least {text}, unknown because {reason}" if value > 0 else f"unknown because {reason}"


def hourly(cost: StackCost) -> str:
    """The stack's hourly cost while running, or ``unknown (<why>)`` with the priced part as a lower bound."""
    why = cost.hourly_reason
    if why is None:
        return rate(cost.hourly_usd)
    return f"unknown (at least {rate(cost.hourly_usd)}; {why})" if cost.hourly_usd > 0 else f"unknown ({why})"


def cell(value: float, reason: str | None, show: Any = usd) -> str:
    """A summary cell: the dollars (``show`` writes them), or ``unknown``."""
    return "unknown" if reason is not None else show(value)


def cost_json(cost: StackCost) -> dict[str, Any]:
    """The cost's JSON: every unknown figure ``null`` with its reason (``StackCost.as_dict``)."""
    return camel_keys(cost.as_dict())
