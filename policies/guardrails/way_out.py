"""The ways out of a budget the worst case exceeds: only what the stack can set. Hours never below the cloud's
shortest runtime, a spot cap only on a spot stack (and said to likely never launch below the estimated spot
price), the run of a sweep whose own maxRuntimeHours decides named, and every figure shown as money is shown."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from gpulease.core import vocabulary as v
from gpulease.core.money import usd, usd_per_hour


def _clean(x: float) -> float:
    """Rounding noise (``9.1e-13``) of a difference of sums is not a figure."""
    return 0.0 if abs(x) < 1e-6 else round(x, 6)


def _cloud(line: Any) -> str:
    return "alicloud" if str(line.type).startswith("alicloud:") else "aws"


def floor_shown(rate: float) -> float:
    """``rate`` rounded down to a figure ``usd_per_hour`` shows exactly (never rounded up past the rate)."""
    if rate <= 0:
        return 0.0
    for places in (4, 3, 2):
        down = math.floor(rate * 10 ** places) / 10 ** places
        if float(usd_per_hour(down).removeprefix("$").removesuffix("/h").replace(",", "")) <= rate:
            return down
    return 0.0


def _overriding(lines: Sequence[Any]) -> list[tuple[str, float]]:
    """The experiments (runs of a sweep) whose runtime is not the one most share: they set their own."""
    runtimes = {line.experiment: line.runtime_hours for line in lines if line.compute and line.runtime_hours}
    if len(set(runtimes.values())) < 2:
        return []
    common = Counter(runtimes.values()).most_common(1)[0][0]
    return sorted((name, hours) for name, hours in runtimes.items() if hours != common)


def what_fits(budget: float, limit: float, worst: float, margin: float, lines: Sequence[Any]) -> str:
    """``; budgetUsd 50 covers 11.2 h at $4.400/h (storage $0.80); accepted: maxRuntimeHours 11.2 or less, an
    instance type at most $2.050/h for the 24 h, or budgetUsd 106 or more``."""
    needed = math.ceil(worst / (1 - margin / 100) * 100) / 100
    timed = [ln for ln in lines if ln.runtime_hours and ln.max_hourly_usd is not None]
    rate = sum(ln.max_hourly_usd for ln in timed)
    runtime = max((ln.runtime_hours for ln in timed), default=0.0)
    if not rate or not runtime:
        return f"; budgetUsd {budget:g} is the stack file's field; accepted: budgetUsd {needed:g} or more"
    fixed = _clean(max(worst - sum(ln.max_hourly_usd * ln.runtime_hours for ln in timed), 0.0))
    compute = [ln for ln in lines if ln.compute]
    others = _clean(max(worst - sum(ln.worst_case_usd or 0.0 for ln in compute), 0.0))
    shorter = math.floor(max((limit - fixed) / rate, 0.0) * 100) / 100
    floor_h = max(v.MIN_RUNTIME_MINUTES[_cloud(ln)] for ln in compute or lines) / 60
    ways = []
    if shorter >= floor_h:
        own = _overriding(lines)
        where = ("" if not own else " for every run (the base and "
                 + ", ".join(f"run {name}, which sets its own maxRuntimeHours {hours:g}" for name, hours in own) + ")")
        ways.append(f"maxRuntimeHours {shorter:g} or less{where}")
    hours = sum(ln.runtime_hours or 0.0 for ln in compute) or runtime
    per_hour = floor_shown((limit - others) / hours)
    each = f" each (for {len(compute)} instances)" if len(compute) > 1 else ""
    spot = [ln for ln in compute if " spot" in f" {ln.item}"]
    if per_hour > 0:
        what = "an instance type or a spot cap (maxSpotPriceUsd)" if spot else "an instance type"
        way = f"{what} at most {usd_per_hour(per_hour)}{each} for the {runtime:g} h"
        estimated = min((ln.hourly_usd for ln in spot if ln.hourly_usd is not None), default=None)
        if estimated is not None and per_hour < estimated:
            way += (f" (a spot request capped below the estimated spot price {usd_per_hour(estimated)} likely never "
                    "launches)")
        ways.append(way)
    lead = "" if shorter >= floor_h else (f"no shorter runtime fits (maxRuntimeHours is at least {floor_h:g} h on "
                                          f"{_cloud((compute or lines)[0])}); ")
    if per_hour <= 0:
        lead += f"no instance price fits (the disks, addresses and buckets alone take {usd(others)} of it); "
    return (f"; budgetUsd {budget:g} covers {max(shorter, 0):g} h at {usd_per_hour(rate)} (disks, addresses and "
            f"buckets {usd(others)}); {lead}accepted: " + ", ".join(ways) + (", or " if ways else "")
            + f"budgetUsd {needed:g} or more")
