"""The cost model's figures: one line per billed item of a resource, summed per experiment and per stack."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

SHARED = "(shared)"
"""The experiment name of a sweep's shared resources (no ``gpulease:experiment`` tag of their own)."""


@dataclass(frozen=True)
class CostLine:
    """One billed item of one resource."""

    experiment: str
    resource: str
    type: str
    item: str
    hourly_usd: float | None
    max_hourly_usd: float | None
    runtime_hours: float | None
    after_destroy_monthly_usd: float = 0.0
    retained: bool = False
    estimate: bool = False
    price_as_of: str | None = None
    """The date of the price behind ``hourly_usd`` (ISO); None when unpriced."""
    cap_as_of: str | None = None
    """The date of the price behind ``max_hourly_usd`` when it is a different catalog price (the on-demand cap of a
    spot instance priced at its current spot price); None when the same, or when the cap is the stack's own."""
    compute: bool = False
    """An instance-hours line (an instance, or a group's instances), as opposed to a disk, an address, a bucket."""
    region: str | None = None
    """The region it was priced in (its own provider's; a stack may use both clouds)."""
    keeps_billing_stopped: bool = False
    """A disk or an address: billed while its instance is stopped (``gpulease.core.cost.stopped``)."""

    @property
    def expected_usd(self) -> float | None:
        if self.hourly_usd is None or self.runtime_hours is None:
            return None
        return self.hourly_usd * self.runtime_hours

    @property
    def worst_case_usd(self) -> float | None:
        if self.max_hourly_usd is None or self.runtime_hours is None:
            return None
        return self.max_hourly_usd * self.runtime_hours


@dataclass(frozen=True)
class ExperimentCost:
    """The lines of one experiment (a sweep's shared resources form their own row)."""

    name: str
    shared: bool
    hourly_usd: float
    max_hourly_usd: float
    runtime_hours: float | None
    expected_usd: float
    worst_case_usd: float
    after_destroy_monthly_usd: float
    budget_usd: float | None
    stopped_hourly_usd: float | None = None
    """Per hour while its instance is stopped by a spot reclaim (its disks and addresses only); None when it has no
    instance that a reclaim stops (``gpulease.core.cost.stopped``)."""
    worst_case_known: bool = True
    """False when something it bills has no price, or an instance no runtime: ``worst_case_usd`` is then a lower
    bound only, and ``worst_case_reason`` says what is missing."""
    worst_case_reason: str | None = None


@dataclass
class StackCost:
    cloud: str | None
    region: str | None
    hourly_usd: float
    max_hourly_usd: float
    expected_usd: float
    worst_case_usd: float
    after_destroy_monthly_usd: float
    lines: list[CostLine] = field(default_factory=list)
    experiments: list[ExperimentCost] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unknown_prices: list[str] = field(default_factory=list)
    prices_as_of: str | None = None
    """The oldest date among the prices the lines used (the catalog's oldest when none was used)."""
    price_catalog: str | None = None
    """Where the prices came from: the shipped catalog's date and any override files."""
    worst_case_known: bool = True
    """False when something billed has no price (an instance type, a resource type the model does not price, a
    group's size) or no runtime: ``worst_case_usd`` is then a lower bound only, and a report says the worst case
    is unknown with ``worst_case_reason`` (never $0)."""
    worst_case_reason: str | None = None
    """What makes the worst case unknown (None when it is known)."""
    hourly_unknown: str | None = None
    """Why the hourly figures are unknown besides unpriced compute (a partial review: what the program registers
    after its failure is not in them); None when nothing else hides any."""
    stopped_hourly_usd: float | None = None
    """Per hour while the experiments whose spot instances a reclaim stops are stopped: their disks and addresses
    only (``gpulease.core.cost.stopped``); None when no instance of the stack is stopped by a reclaim."""

    def as_dict(self) -> dict[str, Any]:
        """JSON form: an unknown worst case is ``null`` with its reason, never the lower bound."""
        out = asdict(self)
        out["lines"] = [
            {**asdict(line), "expected_usd": line.expected_usd, "worst_case_usd": line.worst_case_usd} for line in self.lines
        ]
        if not self.worst_case_known:
            out["worst_case_usd"] = None
        for exp in out["experiments"]:
            if not exp["worst_case_known"]:
                exp["worst_case_usd"] = None
        return out



def price_dates_used(lines: Iterable[CostLine]) -> list[str]:
    """Every price date the lines used (ISO strings)."""
    return [d for line in lines for d in (line.price_as_of, line.cap_as_of) if d]
