"""The price of each phase of a stack that declares ``phase`` (``prep | train | parked``), side by side.

The stack is rendered once per phase (the current phase's rendering is reused) and each rendering priced by the
same cost model as the stack itself: the hourly price while that phase runs (its instance, disks, address and
bucket) and what it costs per month, which for ``parked`` is storage alone (the data disk and the bucket).
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass
from typing import Any

from gpulease.core import clock
from gpulease.core import resources as rt
from gpulease.core.catalog import HOURS_PER_MONTH
from gpulease.core.money import usd_per_hour, usd_per_month
from gpulease.review.engine import estimate
from gpulease.review.render import Rendering, render

PHASES = ("prep", "train", "parked")
INSTANCE_TYPES = (rt.AWS_INSTANCE, rt.ALI_INSTANCE)


@dataclass(frozen=True)
class PhasePrice:
    phase: str
    current: bool
    instance: str
    """The instance type(s) of that phase, ``none`` when parked."""
    hourly_usd: float | None
    monthly_usd: float | None
    """Around the clock for a month (730 h): for ``parked`` what storage costs; for the others an upper bound."""
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _section(config: dict[str, Any]) -> dict[str, Any] | None:
    spec = config.get("gpulease:experiment")
    if spec is None:
        spec = (config.get("gpulease:sweep") or {}).get("base")
    return spec if isinstance(spec, dict) else None


def declared_phase(rendering: Rendering) -> str | None:
    spec = _section(rendering.config)
    return str(spec["phase"]) if spec and "phase" in spec else None


def phase_prices(rendering: Rendering) -> list[PhasePrice] | None:
    """Each phase's price for a stack that declares ``phase`` (None for one that does not)."""
    current = declared_phase(rendering)
    if current is None or rendering.error:
        return None
    prices = []
    for phase in PHASES:
        if phase == current:
            r = rendering
        else:
            config = copy.deepcopy(rendering.config)
            section = _section(config)
            assert section is not None
            section["phase"] = phase
            r = render(config, stack=rendering.stack, project=rendering.project, now=clock.utcnow())
        if r.error:
            prices.append(PhasePrice(phase, phase == current, "?", None, None, r.error))
            continue
        cost = estimate(r)
        types = sorted({str(x.inputs.get("instanceType")) for x in r.resources if x.type in INSTANCE_TYPES})
        prices.append(PhasePrice(phase, phase == current, ", ".join(types) or "none", cost.hourly_usd,
                                 cost.hourly_usd * HOURS_PER_MONTH))
    return prices


def phase_line(prices: list[PhasePrice]) -> str:
    """One line: ``phase: prep | per hour: prep $0.31 (m6a.xlarge) · train $0.62 (g5.xlarge) · parked $0.03
    ($20.11/month storage)``."""
    current = next((p.phase for p in prices if p.current), "?")
    parts = []
    for p in prices:
        if p.hourly_usd is None:
            parts.append(f"{p.phase} ? ({p.error})")
        elif p.phase == "parked":
            parts.append(f"parked {usd_per_hour(p.hourly_usd)} ({usd_per_month(p.monthly_usd or 0)}, storage only)")
        else:
            parts.append(f"{p.phase} {usd_per_hour(p.hourly_usd)} ({p.instance})")
    return f"phase: {current}; per hour: " + " · ".join(parts)
