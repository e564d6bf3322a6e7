"""A cluster on Alibaba Cloud (``nodes`` above one): every node in one vSwitch at an address fixed at plan time, a
deployment set with the LowLatency strategy where it applies, an Elastic RDMA Interface (ERI) per node on the types
that take one, and the security group's rule admitting its own members. Every node carries the same
``auto_release_time``: one deadline, and ECS releases each node itself.

Sources (docs/clusters.md lists them with what cannot be verified without a cloud):
- deployment sets: the LowLatency strategy keeps the set's instances (at most 20, one zone) in one network
  topology; spot instances cannot be created in a deployment set:
  https://www.alibabacloud.com/help/en/ecs/user-guide/deployment-set-overview (so a spot cluster has none)
- an ERI is a secondary ENI with ``NetworkInterfaceTrafficMode = HighPerformance``:
  https://www.alibabacloud.com/help/en/ecs/user-guide/elastic-rdma-network-interface-card-eri, the pulumi_alicloud
  ``ecs.Instance`` docstring (``network_interfaces.network_interface_traffic_mode``)
- a vSwitch reserves its first and its last three addresses:
  https://www.alibabacloud.com/help/en/vpc/user-guide/create-and-manage-vswitch
- a security group rule whose source is the group itself admits its members even with ``inner_access_policy = Drop``
  (``ecs.SecurityGroupRule.source_security_group_id``, pulumi_alicloud docstring)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulumi
import pulumi_alicloud as alicloud

from components.alicloud.context import AlicloudContext
from components.alicloud.network import vswitch_cidr
from components.cluster_plan import cluster_placement, node_addresses
from components.naming import scoped_name
from components.plan import ClusterPlacement, ExperimentParts, Launch, Placement, PlacementError
from gpulease.core.catalog.fabric import fabric_of

if TYPE_CHECKING:
    from components.spec.experiment import ExperimentSpec
    from gpulease.core.catalog import InstanceType

VSWITCH_RESERVED_HEAD = 1
VSWITCH_RESERVED_TAIL = 3


def node_instance_args(exp: ExperimentParts, launch: Launch) -> dict:
    """A cluster node's extra inputs: its fixed address, its deployment set and its ERI (nothing for one instance)."""
    node = launch.node
    if node is None:
        return {}
    args: dict = {"private_ip": node.address}
    if node.group is not None:
        args["deployment_set_id"] = node.group
    if node.fabric_interfaces:
        args["network_interfaces"] = {
            "network_interface_traffic_mode": "HighPerformance",
            "vswitch_id": launch.network.subnets[exp.placed.placement.zone],
            "security_group_ids": [launch.network.security_group.id],
        }
    return args


class AlicloudCluster:
    """The cluster part of the Alibaba Cloud cloud."""

    def plan_cluster(
        self, exp: ExperimentSpec, instance_type: InstanceType, placement: Placement, ctx: AlicloudContext
    ) -> ClusterPlacement:
        """The nodes' addresses in the vSwitch (the given one, else the /24 the stack creates in the zone)."""
        if placement.subnet_id:
            found = alicloud.vpc.get_switches(ids=[placement.subnet_id], opts=ctx.invoke_opts()).vswitches
            if not found:
                raise PlacementError(f"network.subnetId: vSwitch {placement.subnet_id} does not exist in {ctx.region}")
            cidr = found[0].cidr_block
        else:
            cidr = vswitch_cidr(placement.zone)
        addresses = node_addresses(cidr, exp.nodes, f"{pulumi.get_stack()}/{exp.name}",
                                   reserved_head=VSWITCH_RESERVED_HEAD, reserved_tail=VSWITCH_RESERVED_TAIL)
        fabric = fabric_of("alicloud", instance_type.type)
        # Spot instances cannot be created in a deployment set: a spot cluster is placed by zone and vSwitch only.
        return cluster_placement(exp, fabric, addresses, low_latency=fabric.low_latency and exp.market == "on-demand")

    def allow_cluster_traffic(self, name: str, security_group: pulumi.CustomResource, tags: dict,
                              parent: pulumi.Resource) -> None:
        """All protocols in from the group's own members (egress is open already); no other source is opened."""
        alicloud.ecs.SecurityGroupRule(
            f"{name}-cluster-in", security_group_id=security_group.id, type="ingress", ip_protocol="all",
            port_range="-1/-1", source_security_group_id=security_group.id, nic_type="intranet", policy="accept",
            priority=1, description="all traffic from the cluster's own nodes", opts=pulumi.ResourceOptions(parent=parent),
        )

    def create_cluster_group(self, exp: ExperimentParts) -> pulumi.Input[str] | None:
        """A deployment set with the LowLatency strategy (on-demand clusters of types that take it)."""
        cluster = exp.placed.cluster
        if cluster is None or not cluster.low_latency:
            return None
        deployment_set = alicloud.ecs.EcsDeploymentSet(
            f"{exp.name}-deployment-set",
            deployment_set_name=scoped_name(f"{exp.name}-nodes", 128),
            description=f"gpulease {exp.name}: {cluster.nodes} nodes, low latency",
            strategy="LowLatency",
            opts=exp.opts(),
        )
        return deployment_set.id
