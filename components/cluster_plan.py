"""What a cloud's cluster lookups share (``plan_cluster`` in ``components/<cloud>/cluster.py``): the nodes' fixed
private addresses and the planned cluster. Kept apart from ``components/cluster.py`` because the cloud folders
import it, and they may not import the spec at run time."""

from __future__ import annotations

import hashlib
import ipaddress
from typing import TYPE_CHECKING

from components.plan import ClusterPlacement, PlacementError
from gpulease.core.catalog.fabric import Fabric

if TYPE_CHECKING:
    from components.spec.experiment import ExperimentSpec


def node_addresses(cidr: str, count: int, seed: str, *, reserved_head: int, reserved_tail: int) -> tuple[str, ...]:
    """``count`` consecutive private addresses in ``cidr`` for the nodes, chosen from ``seed`` (the stack and the
    experiment) so that a re-run picks the same ones and two clusters in one subnet rarely overlap; the cloud's
    reserved addresses at the start and the end of the subnet are never chosen."""
    net = ipaddress.ip_network(cidr, strict=False)
    usable = net.num_addresses - reserved_head - reserved_tail
    if usable < count:
        raise PlacementError(f"the subnet {cidr} has {max(usable, 0)} usable addresses; a cluster of {count} nodes needs "
                             f"{count}; accepted: a larger subnet (network.subnetId)")
    span = usable - count + 1
    start = int(hashlib.sha256(seed.encode()).hexdigest(), 16) % span
    first = int(net.network_address) + reserved_head + start
    return tuple(str(ipaddress.ip_address(first + i)) for i in range(count))


def cluster_placement(
    exp: ExperimentSpec, fabric: Fabric, addresses: tuple[str, ...], *, low_latency: bool
) -> ClusterPlacement:
    """The cluster as planned: the fabric's interfaces unless the spec asks for TCP only."""
    interfaces = 0 if exp.cluster.fabric == "tcp" else fabric.interfaces
    return ClusterPlacement(nodes=exp.nodes, addresses=addresses, fabric=fabric, fabric_interfaces=interfaces,
                            low_latency=low_latency)
