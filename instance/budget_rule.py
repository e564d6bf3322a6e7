"""How much has this instance spent? The budget rule, alone (standard library only).

The estimate is ``hours this instance has run x its worst-case hourly price`` (the ``gpulease:max-hourly-usd``
tag: its spot cap, else the on-demand price), against the ``gpulease:budget-usd`` tag. The hours are running time
only, summed over the boots of this instance id (``instance_state``): a spot instance stopped by a reclaim costs
its volumes, not its hourly price, while stopped. At each threshold (percent) it warns once; the thresholds
already warned are kept in the watchdog's state, so a restart does not warn twice. It is an upper bound for the
instance alone (no storage, no traffic), never a bill."""

from __future__ import annotations

import math
from typing import Any

try:
    from instance.instance_state import number
except ImportError:  # on the instance: the other tools are installed next to this file
    from instance_state import number  # type: ignore[no-redef]


def tag_number(text: Any) -> float | None:
    """A tag's value as a price or budget: a finite number >= 0 (never NaN, inf, a boolean or words)."""
    if isinstance(text, bool) or text is None:
        return None
    try:
        value = float(text)
    except (TypeError, ValueError, OverflowError):
        return None
    return value if math.isfinite(value) and value >= 0 else None


def warned_from_state(state: dict[str, Any]) -> list[float]:
    """The thresholds already warned: a list of numbers in the state; anything else reads as none warned."""
    found = state.get("budget_warned")
    if not isinstance(found, list):
        return []
    return [t for t in (number(x) for x in found) if t is not None]  # overflow-safe: a huge integer is no number


def estimate(hourly: float, budget: float | None, hours: float, thresholds: list[Any],
             warned: list[float]) -> tuple[dict[str, Any], list[float]]:
    """The ``spend`` record of the heartbeat, and the thresholds newly crossed (to warn about now)."""
    usd = round(hourly * hours, 2)
    spend: dict[str, Any] = {"maxHourlyUsd": hourly, "hours": round(hours, 2), "usdAtMost": usd,
                             "budgetUsd": budget, "percent": None, "warned": warned}
    crossed: list[float] = []
    if budget:
        percent = 100 * hourly * hours / budget
        spend["percent"] = round(percent, 1)
        for threshold in sorted(t for t in (tag_number(x) for x in thresholds) if t is not None):
            if percent >= threshold and threshold not in warned and threshold not in crossed:
                crossed.append(threshold)
    return spend, crossed
