"""Every node of a cluster, from rank 0's outputs.

A cluster's experiment outputs are rank 0's (``instanceId``, ``publicIp``, ``checkpointUri``) plus ``nodes``:
``[{"rank", "instanceId", "privateIp"}]`` (``components/cluster.py``). Node N reports to its own control area,
``<checkpointUri>nodes/N/_gpulease/`` (rank 0 to the experiment's: ``node_checkpoint_uri``). Only rank 0's address is
an output, so ``gpulease ssh --node N`` in ssh mode goes through rank 0 as a jump host (``ssh -J``, ssh(1)); the
ssm and cloud-assistant modes reach each node by its instance id."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gpulease.live.target import LiveError, Target


def listed(target: Target) -> list[dict[str, Any]]:
    """The nodes the outputs list, by rank; a single instance is one node, rank 0."""
    found = target.outputs.get("nodes")
    if not isinstance(found, list) or not found:
        return [{"rank": 0, "instanceId": target.instance_id, "privateIp": None}]
    return sorted((n for n in found if isinstance(n, dict) and isinstance(n.get("rank"), int)), key=lambda n: n["rank"])


def node_uri(uri: str | None, rank: int) -> str | None:
    """The node's checkpoint URI (the same rule as ``components/cluster.py``'s ``node_checkpoint_uri``)."""
    if uri is None or rank == 0:
        return uri
    return f"{uri.rstrip('/')}/nodes/{rank}/"


def node_target(target: Target, rank: int) -> Target:
    """The target for node ``rank``: its instance id, its private address, its control area."""
    nodes = listed(target)
    ranks = [n["rank"] for n in nodes]
    if rank not in ranks:
        raise LiveError(f"stack {target.stack!r}: --node {rank}: no such node; accepted: "
                        f"{', '.join(map(str, ranks))}")
    if rank == 0:
        return target
    node = next(n for n in nodes if n["rank"] == rank)
    outputs = {**target.outputs, "instanceId": node.get("instanceId"), "privateIp": node.get("privateIp"),
               "publicIp": None, "jumpHost": target.outputs.get("publicIp"),
               "checkpointUri": node_uri(target.checkpoint_uri, rank)}
    return replace(target, outputs=outputs)
