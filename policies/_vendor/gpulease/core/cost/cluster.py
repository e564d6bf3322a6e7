"""A cluster's cost per node and for the whole cluster, read from a stack's cost lines.

A cluster's nodes are built under the names ``<experiment>-node<rank>-…`` (``components/plan.py``), each with its
own instance, disks and address, so the lines already count every node; this groups them back: per node (the most
expensive node, they are alike), and the cluster (every line of the experiment, what the nodes share included).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from gpulease.core.cost.lines import StackCost

_NODE = re.compile(r"^(?P<experiment>.+)-node(?P<rank>\d+)-")


@dataclass(frozen=True)
class ClusterCost:
    experiment: str
    nodes: int
    node_hourly_usd: float
    node_max_hourly_usd: float
    node_worst_case_usd: float
    cluster_hourly_usd: float
    cluster_max_hourly_usd: float
    cluster_worst_case_usd: float
    shared_hourly_usd: float
    """What the nodes share (the bucket), per hour."""
    unknown_reason: str | None = None
    """Why the figures are lower bounds only (an unpriced item of the experiment, no runtime); None when known."""

    def as_dict(self) -> dict[str, Any]:
        """JSON form: the figures ``null`` while they are unknown, with ``unknown_reason``."""
        out = asdict(self)
        if self.unknown_reason is not None:
            out.update({k: None for k in out if k.endswith("_usd")})
        return out


def node_lines(cost: StackCost) -> dict[str, dict[int, list[Any]]]:
    """Each experiment's lines by node rank (only the lines built under a node's name)."""
    per_node: dict[str, dict[int, list[Any]]] = {}
    for line in cost.lines:
        found = _NODE.match(line.resource)
        if found and found["experiment"] == line.experiment:
            per_node.setdefault(line.experiment, {}).setdefault(int(found["rank"]), []).append(line)
    return per_node


def _total(lines: list[Any], attr: str) -> float:
    return sum(getattr(line, attr) or 0.0 for line in lines)


def heaviest_node(nodes: dict[int, list[Any]]) -> list[Any]:
    """The lines of the node with the largest worst case: the one ``per node`` figures describe."""
    return max(nodes.values(), key=lambda lines: _total(lines, "worst_case_usd"))


def cluster_costs(cost: StackCost) -> list[ClusterCost]:
    """One entry per experiment built as a cluster (lines of two or more node ranks)."""
    out = []
    for name, nodes in sorted(node_lines(cost).items()):
        if len(nodes) < 2:
            continue
        experiment = next(e for e in cost.experiments if e.name == name)
        total = _total
        heaviest = heaviest_node(nodes)
        in_nodes = sum(total(lines, "hourly_usd") for lines in nodes.values())
        out.append(ClusterCost(
            experiment=name,
            nodes=len(nodes),
            node_hourly_usd=total(heaviest, "hourly_usd"),
            node_max_hourly_usd=total(heaviest, "max_hourly_usd"),
            node_worst_case_usd=total(heaviest, "worst_case_usd"),
            cluster_hourly_usd=experiment.hourly_usd,
            cluster_max_hourly_usd=experiment.max_hourly_usd,
            cluster_worst_case_usd=experiment.worst_case_usd,
            shared_hourly_usd=experiment.hourly_usd - in_nodes,
            unknown_reason=experiment.hourly_reason or (None if experiment.worst_case_known
                                                        else experiment.worst_case_reason or "unknown worst case"),
        ))
    return out
