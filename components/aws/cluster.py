"""A cluster on AWS (``nodes`` above one): a cluster placement group, every node in one subnet at an address fixed at
plan time, EFA interfaces where the type has them, the security group's rules between its own members, an Elastic
IP per EFA node on its primary network interface, and one schedule per node that terminates it at the deadline.

Sources (docs/clusters.md lists them with what cannot be verified without a cloud):
- cluster placement groups: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/placement-strategies.html
- the EFA security group, all traffic to and from the group itself:
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start.html#efa-start-security
- EFA interfaces at launch only (they cannot be attached to a running instance), one per network card, the primary
  an EFA with ENA (``efa``), the others EFA-only (``efa-only``) at device index 0:
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/create-efa.html,
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html
- no public IPv4 address is assigned automatically to an instance launched with more than one network interface:
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/using-instance-addressing.html#concepts-public-addresses
  (hence an Elastic IP per EFA node: SSH and the node's outbound traffic in a default VPC need a public address)
- the five reserved addresses of a subnet (the first four and the last):
  https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import pulumi
import pulumi_aws as aws

from components.aws.context import AwsContext
from components.aws.lifetime import create_termination_schedule
from components.cluster_plan import cluster_placement, node_addresses
from components.naming import scoped_name
from components.plan import BuiltNode, ClusterPlacement, ExperimentParts, Launch, Placement, PlacementError
from gpulease.core.catalog.fabric import fabric_of

if TYPE_CHECKING:
    from components.spec.experiment import ExperimentSpec
    from gpulease.core.catalog import InstanceType

SUBNET_RESERVED_HEAD = 4
SUBNET_RESERVED_TAIL = 1


def instance_network_args(exp: ExperimentParts, launch: Launch) -> dict:
    """The instance's network inputs: a single instance's subnet, security group and public address; a cluster node
    adds its placement group and fixed address, and an EFA node takes all of it from a launch template instead."""
    subnet = launch.network.subnets[exp.placed.placement.zone]
    single = {"subnet_id": subnet, "vpc_security_group_ids": [launch.network.security_group.id],
              "associate_public_ip_address": True}
    node = launch.node
    if node is None:
        return single
    group = {"placement_group": node.group} if node.group is not None else {}
    if not node.fabric_interfaces:
        return {**single, **group, "private_ip": node.address}
    template = efa_launch_template(exp, launch, subnet)
    return {**group, "launch_template": {"id": template.id, "version": template.latest_version.apply(str)}}


def efa_launch_template(exp: ExperimentParts, launch: Launch, subnet: pulumi.Input[str]) -> aws.ec2.LaunchTemplate:
    """One interface per network card: card 0 an EFA with ENA at the node's fixed address (it carries IP traffic),
    every other card an EFA-only interface; all in the node's subnet and the stack's security group."""
    node = launch.node
    assert node is not None
    interfaces = []
    for card in range(node.fabric_interfaces):
        interface: dict = {
            "network_card_index": card,
            "device_index": 0,
            "interface_type": "efa" if card == 0 else "efa-only",
            "subnet_id": subnet,
            "security_groups": [launch.network.security_group.id],
            "delete_on_termination": "true",
            "description": f"gpulease {exp.name}: EFA {card}",
        }
        if card == 0:
            interface["private_ip_address"] = node.address
        interfaces.append(interface)
    return aws.ec2.LaunchTemplate(
        f"{exp.name}-efa",
        name=scoped_name(f"{exp.name}-efa"),
        description=f"gpulease {exp.name}: {node.fabric_interfaces} EFA interface(s)",
        network_interfaces=interfaces,
        # The instance sets its own metadata options; the template says the same, so that nothing launched from it
        # alone could read metadata without a token.
        metadata_options={"http_endpoint": "enabled", "http_tokens": "required", "http_put_response_hop_limit": 2,
                          "instance_metadata_tags": "enabled"},
        tags=exp.tags,
        opts=exp.opts(),
    )


class AwsCluster:
    """The cluster part of the AWS cloud."""

    def plan_cluster(
        self, exp: ExperimentSpec, instance_type: InstanceType, placement: Placement, ctx: AwsContext
    ) -> ClusterPlacement:
        """The nodes' addresses in the placement's subnet (the first zone offering the type, as for one instance),
        which must have a free address for every node."""
        subnet = aws.ec2.get_subnet(id=placement.subnet_id, opts=ctx.invoke_opts())
        free = subnet.available_ip_address_count
        if free is not None and free < exp.nodes:
            raise PlacementError(f"nodes: subnet {subnet.id} in {placement.zone} has {free} free addresses, fewer than the "
                                 f"{exp.nodes} nodes; accepted: a subnet with room (network.subnetId) or fewer nodes")
        addresses = node_addresses(subnet.cidr_block, exp.nodes, f"{pulumi.get_stack()}/{exp.name}",
                                   reserved_head=SUBNET_RESERVED_HEAD, reserved_tail=SUBNET_RESERVED_TAIL)
        fabric = fabric_of("aws", instance_type.type)
        return cluster_placement(exp, fabric, addresses, low_latency=fabric.low_latency)

    def allow_cluster_traffic(self, name: str, security_group: pulumi.CustomResource, tags: dict,
                              parent: pulumi.Resource) -> None:
        """EFA's rule pair: all protocols in from, and out to, the group itself; no address outside it is opened."""
        opts = pulumi.ResourceOptions(parent=parent)
        common = {"security_group_id": security_group.id, "referenced_security_group_id": security_group.id,
                  "ip_protocol": "-1", "tags": tags, "opts": opts}
        aws.vpc.SecurityGroupIngressRule(f"{name}-cluster-in", description="all traffic from the cluster's own nodes",
                                         **common)
        aws.vpc.SecurityGroupEgressRule(f"{name}-cluster-out", description="all traffic to the cluster's own nodes",
                                        **common)

    def create_cluster_group(self, exp: ExperimentParts) -> pulumi.Input[str] | None:
        """A cluster placement group: the nodes close together in one zone (low latency, high throughput)."""
        cluster = exp.placed.cluster
        if cluster is None or not cluster.low_latency:
            return None
        group = aws.ec2.PlacementGroup(
            f"{exp.name}-placement", name=scoped_name(f"{exp.name}-placement"), strategy="cluster", tags=exp.tags,
            opts=exp.opts(),
        )
        return group.name

    def after_nodes(self, exp: ExperimentParts, nodes: list[BuiltNode]) -> None:
        """An EFA node's Elastic IP first (its public address: nothing reaches the node, and the node reaches
        nothing outside its VPC, before it), then one schedule per node terminating it at the deadline."""
        cluster = exp.placed.cluster
        if cluster is not None and cluster.fabric_interfaces:
            for node in nodes:
                node.public_ip = node_address(node).public_ip
        create_termination_schedule(exp.name, instances=[n.instance for n in nodes], deadline=exp.deadline,
                                    tags=exp.tags, ctx=exp.ctx, parent=exp.parent,
                                    node_names=[n.parts.name for n in nodes],
                                    boundary=exp.spec.iam.permissions_boundary)


def node_address(node: BuiltNode) -> aws.ec2.Eip:
    """An EFA node's Elastic IP, associated with the node's primary network interface (card 0's EFA with ENA).

    Never through the instance id: AssociateAddress's ``InstanceId`` requires that "the instance must have exactly
    one attached network interface", and "if the instance has more than one network interface, you must specify a
    network interface ID" (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_AssociateAddress.html); an
    EFA node has one per network card, and AWS answers ``InvalidInstanceID`` ("There are multiple interfaces
    attached to instance")."""
    inst = cast(aws.ec2.Instance, node.instance)
    return aws.ec2.Eip(f"{node.parts.name}-ip", domain="vpc", network_interface=inst.primary_network_interface_id,
                       tags=node.parts.tags, opts=node.parts.opts())
