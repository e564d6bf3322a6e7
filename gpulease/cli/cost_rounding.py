"""The notes that say when figures shown rounded to the cent do not add up to the total shown beside them (the
total is the exact sum, rounded once): the lines against the stack's worst case, and in the per-experiment table
the rows against the stack's totals and each row against its own lines."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from gpulease.core.cost import StackCost
from gpulease.core.cost.cluster import heaviest_node, node_lines
from gpulease.core.money import shown_value, usd


def rounded_sum(parts: Sequence[float | None], total: float) -> Decimal | None:
    """The sum of ``parts`` each as shown (to the cent) when it differs from ``total`` as shown; else None (also
    when a part is unknown: there is no sum to show)."""
    if any(p is None for p in parts):
        return None
    added = sum((shown_value(p) for p in parts if p is not None), Decimal(0))
    return None if shown_value(added) == shown_value(total) else added


def lines_rounded(cost: StackCost) -> str:
    """The main table's note, after the stack's worst case."""
    if not cost.worst_case_known:
        return ""
    added = rounded_sum([line.worst_case_usd for line in cost.lines], cost.worst_case_usd)
    return "" if added is None else f" (the lines, each rounded, add up to {usd(added)})"


def experiments_rounded(cost: StackCost) -> list[str]:
    """The per-experiment table's notes: its expected and worst-case columns against the stack's totals, and each
    row's worst case against the lines of that experiment in the table above."""
    exps = cost.experiments
    notes = []
    if cost.expected_reason is None and all(e.expected_reason is None for e in exps):
        added = rounded_sum([e.expected_usd for e in exps], cost.expected_usd)
        if added is not None:
            notes.append(f"the expected column, each row rounded, adds up to {usd(added)}; the total "
                         f"{usd(cost.expected_usd)} is the exact sum, rounded once")
    if cost.worst_case_known and all(e.worst_case_known for e in exps):
        added = rounded_sum([e.worst_case_usd for e in exps], cost.worst_case_usd)
        if added is not None:
            notes.append(f"the worst-case column, each row rounded, adds up to {usd(added)}; the total "
                         f"{usd(cost.worst_case_usd)} is the exact sum, rounded once")
    for exp in exps:
        mine = [line.worst_case_usd for line in cost.lines if line.experiment == exp.name]
        if not exp.worst_case_known or not mine:
            continue
        added = rounded_sum(mine, exp.worst_case_usd)
        if added is not None:
            notes.append(f"{exp.name}: its lines' worst cases, each rounded, add up to {usd(added)}; its row's "
                         f"{usd(exp.worst_case_usd)} is the exact sum, rounded once")
    return notes


def node_rounded(cost: StackCost, experiment: str, node_worst_usd: float) -> str:
    """The cluster summary's note, after its worst case per node: that node's lines, each rounded, when they do
    not add up to it."""
    nodes = node_lines(cost).get(experiment)
    if not nodes:
        return ""
    added = rounded_sum([line.worst_case_usd for line in heaviest_node(nodes)], node_worst_usd)
    return "" if added is None else f"; its lines, each rounded, add up to {usd(added)}"
