"""A cluster (``nodes`` above one), cloud-neutral: the nodes' fixed addresses, what each node is told, and the
outputs. The skeleton (``build.py``) builds every node with the same builders as a single instance, each node an
``ExperimentParts.for_node`` with its own names and the node tag; what differs per cloud (the placement group or
deployment set, the fabric interfaces, the rules between the nodes, the one deadline of all nodes) is on the cloud
contract (``components/cloud.py``); what the clouds' lookups share is in ``components/cluster_plan.py``.
"""

from __future__ import annotations

import re

import pulumi

from components.plan import BuiltNode, NodeLaunch, PlacedExperiment
from components.spec.experiment import ExperimentSpec
from components.userdata.cluster import ClusterSettings, fabric_env
from components.userdata.settings import JOB_COMMANDS

NOTICE_FOLDER = "_gpulease/cluster/"


def node_ranks(placed: PlacedExperiment) -> list[int | None]:
    """The nodes to build: ``[None]`` for a single instance (named as always), the ranks for a cluster."""
    return [None] if placed.cluster is None else list(range(placed.cluster.nodes))


def node_checkpoint_uri(uri: str, rank: int | None) -> str:
    """Where a node syncs its checkpoint directory: rank 0 (and a single node) to the experiment's URI, which holds
    the shared checkpoint rank 0 writes; any other rank below it, under ``nodes/<rank>/`` (its shards, if the job
    writes any), so that no two nodes sync over each other."""
    if rank in (None, 0) or uri == "none":
        return uri
    return f"{uri.rstrip('/')}/nodes/{rank}/"


def cluster_settings(
    exp: ExperimentSpec, placed: PlacedExperiment, rank: int, *, stack: str, shared_uri: str | None
) -> ClusterSettings:
    """What node ``rank`` is told (``components/userdata/cluster.py``)."""
    cluster = placed.cluster
    assert cluster is not None
    fabric = cluster.fabric.fabric if cluster.fabric_interfaces else "tcp"
    return ClusterSettings(
        # torchrun names a log folder after its run id, so the id has no path separator.
        cluster_id=re.sub(r"[^A-Za-z0-9._-]", "-", f"{stack}.{exp.name}"),
        rank=rank,
        nodes=cluster.nodes,
        gpus_per_node=placed.instance_type.gpu_count,
        addresses=list(cluster.addresses),
        rendezvous_port=exp.cluster.rendezvous_port,
        notice_port=exp.cluster.notice_port,
        join_timeout_seconds=exp.cluster.join_timeout_seconds,
        fabric=fabric,
        fabric_env=fabric_env(fabric, placed.instance_type.type),
        notice_uri=f"{shared_uri.rstrip('/')}/{NOTICE_FOLDER}" if shared_uri and shared_uri != "none" else None,
        copy_command=JOB_COMMANDS[exp.cloud]["copy_command"],
    )


def node_launch(placed: PlacedExperiment, rank: int | None, group: pulumi.Input[str] | None) -> NodeLaunch | None:
    if rank is None or placed.cluster is None:
        return None
    return NodeLaunch(rank=rank, address=placed.cluster.addresses[rank], group=group,
                      fabric_interfaces=placed.cluster.fabric_interfaces)


def cluster_outputs(placed: PlacedExperiment, built: list[BuiltNode]) -> dict[str, pulumi.Input]:
    """A cluster's own outputs beside rank 0's: every node's instance and private address, the rendezvous."""
    cluster = placed.cluster
    assert cluster is not None
    return {
        "nodes": [{"rank": i, "instanceId": node.instance.id, "privateIp": cluster.addresses[i],
                   "publicIp": node.public_ip or node.instance.public_ip}  # type: ignore[attr-defined]
                  for i, node in enumerate(built)],
        "rendezvous": cluster.addresses[0],
        "fabric": cluster.fabric.fabric if cluster.fabric_interfaces else "tcp",
    }
