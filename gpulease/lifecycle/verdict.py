"""The offline review of one stack file, boiled down to what ``init`` prints and ``up`` decides on: the verdict,
what blocks (the mandatory findings, each with its resource and message), the cost, the worst case against the
budget, and what stays after a destroy (the retained lines and their monthly cost, which ``down`` reports).

``REVIEW`` is the seam a test replaces; by default it is ``gpulease plan``'s own engine."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpulease.core.catalog import HOURS_PER_MONTH
from gpulease.core.money import usd, usd_per_hour
from gpulease.review.cost_text import hourly
from gpulease.review.engine import StackReview, review
from gpulease.review.report import budget_total, worst


@dataclass
class Verdict:
    stack: str
    status: str  # pass, fail, partial, error (gpulease plan's)
    mandatory: list[dict[str, str]] = field(default_factory=list)
    advisory: int = 0
    hourly_usd: float | None = None
    """None when unknown (an unpriced item): ``hourly`` then says why."""
    hourly: str | None = None
    worst_case: str | None = None
    budget_usd: float | None = None
    retained: list[dict[str, Any]] = field(default_factory=list)
    retained_monthly_usd: float = 0.0
    error: str | None = None
    priced: list[dict[str, Any]] = field(default_factory=list)
    """Every priced line (``resource``, ``type``, ``item``, ``hourlyUsd``, ``retained``) with what it costs a month
    while it exists (``monthlyUsd``: a retained line's after-destroy cost, any other's hourly price over a month;
    None when unpriced): what ``down`` says is left when a destroy stops part-way. Empty when nothing was priced."""

    @property
    def blocks(self) -> bool:
        """A deployment goes ahead only on a full review without mandatory findings (fail closed)."""
        return self.status != "pass"

    def as_dict(self) -> dict[str, Any]:
        return {"stack": self.stack, "status": self.status, "mandatory": self.mandatory, "advisoryCount": self.advisory,
                "hourlyUsd": self.hourly_usd, "hourly": self.hourly, "worstCase": self.worst_case, "budgetUsd": self.budget_usd,
                "retained": self.retained, "retainedMonthlyUsd": round(self.retained_monthly_usd, 2),
                "error": self.error}

    def lines(self, target: str | None = None) -> list[str]:
        """The review's lines; ``target`` is what ``gpulease plan`` is given to show the findings (the stack's name
        when that finds its file, else its path: ``init_next.stack_target``), the bare stack name by default."""
        head = {"pass": "PASS", "fail": "FAIL", "partial": "PARTIAL (the review stopped part way)",
                "error": "ERROR (nothing could be reviewed)"}.get(self.status, self.status.upper())
        out = [f"review: {head}"]
        if self.error:
            out.append(f"  {self.error}")
        for item in self.mandatory:
            out.append(f"  mandatory {item['policy']} on {item['resource']}: {item['message']}")
        if self.worst_case is not None:
            budget = f" of a {usd(self.budget_usd)} budget" if self.budget_usd is not None else ""
            per_hour = usd_per_hour(self.hourly_usd) if self.hourly_usd is not None else self.hourly or "unknown"
            out.append(f"  cost: {per_hour}; worst case {self.worst_case}{budget}")
        if self.advisory:
            out.append(f"  {self.advisory} advisory finding{'s' if self.advisory != 1 else ''}: `gpulease plan "
                       f"{target or self.stack}` shows {'them' if self.advisory != 1 else 'it'}")
        return out


def summarize(found: StackReview, stack: str) -> Verdict:
    verdict = Verdict(stack=stack, status=found.status, error=found.rendering.error)
    if found.policy is not None:
        verdict.mandatory = [{"policy": x.policy, "resource": x.resource_name or x.urn or "the stack",
                              "message": " ".join(x.detail.split())} for x in found.policy.mandatory]
        verdict.advisory = len(found.policy.advisory)
    cost = found.cost
    if cost is not None:
        verdict.hourly_usd = round(cost.hourly_usd, 4) if cost.hourly_known else None  # never a lower bound
        verdict.hourly = hourly(cost)
        verdict.worst_case = worst(cost)
        verdict.budget_usd = budget_total(cost)
        kept = [line for line in cost.lines if line.retained or line.after_destroy_monthly_usd > 0]
        verdict.retained = [{"resource": line.resource, "type": line.type, "item": line.item,
                             "monthlyUsd": round(line.after_destroy_monthly_usd, 2)} for line in kept]
        verdict.retained_monthly_usd = cost.after_destroy_monthly_usd
        verdict.priced = [{"resource": line.resource, "type": line.type, "item": line.item,
                          "hourlyUsd": line.hourly_usd, "retained": line.retained,
                          "monthlyUsd": round(line.after_destroy_monthly_usd, 2) if line.retained else
                          (None if line.hourly_usd is None else round(line.hourly_usd * HOURS_PER_MONTH, 2))}
                         for line in cost.lines]
    return verdict


def review_stack_file(path: Path, stack: str) -> Verdict:
    [found] = review([str(path)])
    return summarize(found, stack)


REVIEW: Callable[[Path, str], Verdict] = review_stack_file
