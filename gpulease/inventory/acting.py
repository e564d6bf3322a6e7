"""Acting on decisions, for every cloud: batches in the API's sizes, single calls side by side, outcomes, the
report. A failure is recorded for its resource (or its batch) and the sweep goes on; never a raise.

Each cloud passes an ``ApiErrors`` that says which exceptions its SDK raises, which of them mean "no longer
exists" and how to print them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gpulease.core.vocabulary import rfc3339
from gpulease.inventory.decide import KEEP, Decision, ReapSettings

# Outcome statuses.
KEPT = "kept"
WOULD = "would"
DONE = "done"
GONE = "gone"
FAILED = "failed"


@dataclass(frozen=True)
class ApiErrors:
    types: tuple[type[BaseException], ...]
    not_found: Callable[[BaseException], bool]
    text: Callable[[BaseException], str]
    id_pattern: re.Pattern[str]
    """Ids as the cloud writes them, to find the ones a NotFound error names."""


@dataclass
class Outcome:
    kind: str
    id: str
    region: str
    action: str
    status: str
    reason: str
    detail: str = ""

    def as_dict(self) -> dict[str, str]:
        return {
            "region": self.region,
            "kind": self.kind,
            "id": self.id,
            "action": self.action,
            "status": self.status,
            "reason": self.reason,
            "detail": self.detail,
        }


@dataclass
class SweepReport:
    account: str
    regions: list[str]
    executed: bool
    started_at: datetime
    outcomes: list[Outcome] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    cloud: str = "aws"

    @property
    def failed(self) -> bool:
        return bool(self.errors) or any(o.status == FAILED for o in self.outcomes)

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for outcome in self.outcomes:
            counts[outcome.status] = counts.get(outcome.status, 0) + 1
        return counts

    def as_dict(self) -> dict[str, Any]:
        return {
            "cloud": self.cloud,
            "account": self.account,
            "regions": self.regions,
            "executed": self.executed,
            "startedAt": rfc3339(self.started_at),
            "counts": self.counts(),
            "errors": self.errors,
            "outcomes": [o.as_dict() for o in self.outcomes],
        }


def outcome(decision: Decision, status: str, detail: str = "") -> Outcome:
    r = decision.resource
    return Outcome(r.kind, r.id, r.region, decision.action, status, decision.reason, detail)


def _chunks(items: list[Decision], size: int) -> Iterable[list[Decision]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def split(decisions: list[Decision], settings: ReapSettings) -> tuple[list[Outcome], dict[str, list[Decision]]]:
    """The outcomes known without acting (kept; everything in a dry run) and the rest by action."""
    outcomes = [outcome(d, KEPT) for d in decisions if d.action == KEEP]
    act = [d for d in decisions if d.action != KEEP]
    if not settings.execute:
        return outcomes + [outcome(d, WOULD) for d in act], {}
    by_action: dict[str, list[Decision]] = {}
    for d in act:
        by_action.setdefault(d.action, []).append(d)
    return outcomes, by_action


def batch(
    decisions: list[Decision], size: int, call: Callable[[list[str]], set[str]], done_word: str, errors: ApiErrors
) -> list[Outcome]:
    """One call per ``size`` ids. Ids a NotFound error names are gone already and the rest is sent again (each pass
    drops at least one id, so this ends); a NotFound that names none sends the batch again one id at a time. Any
    other error fails that batch only."""
    outcomes: list[Outcome] = []
    for chunk in _chunks(decisions, size):
        pending = {d.resource.id: d for d in chunk}
        while pending:
            try:
                accepted = call(list(pending))
            except errors.types as exc:
                gone = errors.not_found(exc)
                missing = set(errors.id_pattern.findall(str(exc))) & set(pending) if gone else set()
                if missing:
                    outcomes.extend(outcome(pending.pop(i), GONE, "no longer exists") for i in sorted(missing))
                    continue
                if gone and len(pending) > 1:
                    for d in list(pending.values()):
                        outcomes.extend(batch([d], 1, call, done_word, errors))
                    break
                status, detail = (GONE, "no longer exists") if gone else (FAILED, errors.text(exc))
                outcomes.extend(outcome(d, status, detail) for d in pending.values())
                break
            for rid, d in pending.items():
                if rid in accepted:
                    outcomes.append(outcome(d, DONE, done_word))
                else:
                    outcomes.append(outcome(d, FAILED, "not in the service's answer"))
            break
    return outcomes


def held_by_failed_cancel(
    terminations: list[Decision], cancels: list[Decision], cancel_outcomes: list[Outcome]
) -> tuple[list[Decision], list[Outcome]]:
    """The terminations that may go ahead once the spot requests were cancelled, and a failed outcome for each
    instance whose request could not be cancelled: terminating it would leave a persistent request to launch a
    replacement, so it waits for a later sweep, which tries the cancel again first."""
    failed = {o.id for o in cancel_outcomes if o.status == FAILED}
    held_by: dict[str, str] = {}
    for d in cancels:
        instance_id = getattr(d.resource, "instance_id", None)
        if d.resource.id in failed and instance_id:
            held_by[instance_id] = d.resource.id
    go: list[Decision] = []
    held: list[Outcome] = []
    for d in terminations:
        request_id = held_by.get(d.resource.id) or (
            rid if (rid := getattr(d.resource, "spot_request_id", None)) in failed else None)
        if request_id:
            held.append(outcome(d, FAILED, f"not terminated: cancelling its spot request {request_id} failed; "
                                           "a later sweep cancels first, then terminates"))
        else:
            go.append(d)
    return go, held


def each(decisions: list[Decision], workers: int, act: Callable[[Decision], str], errors: ApiErrors) -> list[Outcome]:
    """One call (or two) per resource, several at a time; NotFound means someone else already removed it."""

    def run(decision: Decision) -> Outcome:
        try:
            return outcome(decision, DONE, act(decision))
        except errors.types as exc:
            if errors.not_found(exc):
                return outcome(decision, GONE, "no longer exists")
            return outcome(decision, FAILED, errors.text(exc))

    if not decisions:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(decisions)))) as pool:
        return list(pool.map(run, decisions))
