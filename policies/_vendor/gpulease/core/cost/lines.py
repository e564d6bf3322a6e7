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


class Known:
    """Whether each figure is the figure or a lower bound only (its ``<name>_reason`` says what it lacks)."""

    hourly_reason: str | None
    expected_reason: str | None
    after_destroy_reason: str | None

    @property
    def hourly_known(self) -> bool:
        return self.hourly_reason is None

    @property
    def expected_known(self) -> bool:
        return self.expected_reason is None

    @property
    def after_destroy_known(self) -> bool:
        return self.after_destroy_reason is None


@dataclass(frozen=True)
class ExperimentCost(Known):
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
    hourly_reason: str | None = None
    """Why ``hourly_usd`` and ``max_hourly_usd`` are lower bounds only (something it bills by the hour has no
    price); None when they are the figure. ``Figures``: every format says "unknown", never the lower bound."""
    expected_reason: str | None = None
    """Why ``expected_usd`` is a lower bound only (an unpriced item, or no runtime to multiply by); None when known."""
    after_destroy_reason: str | None = None
    """Why ``after_destroy_monthly_usd`` is a lower bound only (a retained item without a price); None when known."""


@dataclass
class StackCost(Known):
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
    hourly_reason: str | None = None
    """Why ``hourly_usd`` and ``max_hourly_usd`` are lower bounds only: an item billed by the hour without a price
    (an instance type the catalog lacks, a resource type the model does not price, a group of unknown size), or a
    partial review (what the program registers after its failure is not in them); None when they are the figure."""
    expected_reason: str | None = None
    """Why ``expected_usd`` is a lower bound only: an unpriced item, or a resource without a runtime; None when known."""
    after_destroy_reason: str | None = None
    """Why ``after_destroy_monthly_usd`` is a lower bound only (a retained item without a price); None when known."""
    stopped_hourly_usd: float | None = None
    """Per hour while the experiments whose spot instances a reclaim stops are stopped: their disks and addresses
    only (``gpulease.core.cost.stopped``); None when no instance of the stack is stopped by a reclaim."""

    def as_dict(self) -> dict[str, Any]:
        """JSON form: every unknown figure (of the stack and of each experiment) is ``null`` with its reason and a
        ``*_known`` false, never the lower bound the priced items add up to."""
        out = asdict(self)
        out["lines"] = [
            {**asdict(line), "expected_usd": line.expected_usd, "worst_case_usd": line.worst_case_usd} for line in self.lines
        ]
        for figures in (out, *out["experiments"]):
            null_unknown(figures)
        return out


FIGURES = {"hourly": ("hourly_usd", "max_hourly_usd"), "expected": ("expected_usd",),
           "after_destroy": ("after_destroy_monthly_usd",)}
"""Each figure with a ``<name>_reason`` (beside the worst case's ``worst_case_known``), and the sums it covers."""


def null_unknown(figures: dict[str, Any]) -> None:
    """The JSON of a stack's or an experiment's figures: each unknown one ``null``, with ``<name>_known`` false
    beside its ``<name>_reason``."""
    for name, keys in FIGURES.items():
        known = figures.get(f"{name}_reason") is None
        figures[f"{name}_known"] = known
        if not known:
            figures.update(dict.fromkeys(keys))
    if not figures["worst_case_known"]:
        figures["worst_case_usd"] = None



def price_dates_used(lines: Iterable[CostLine]) -> list[str]:
    """Every price date the lines used (ISO strings)."""
    return [d for line in lines for d in (line.price_as_of, line.cap_as_of) if d]
