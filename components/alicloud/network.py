"""Where the instance lives and who may reach it: zone and vSwitch choice, VPC, security group, SSH rules, key pair."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pulumi
import pulumi_alicloud as alicloud

from components.alicloud.context import AlicloudContext
from components.naming import scoped_name
from components.plan import PlacedExperiment, Placement, PlacementError, SshSource
from gpulease.core import vocabulary as v

if TYPE_CHECKING:  # the spec's types only: at run time a cloud folder needs none of the spec's code
    from components.spec.experiment import ExperimentSpec
    from components.spec.load import StackSpec


# The VPC gpulease creates when the spec names none; one /24 vSwitch per zone inside it.
VPC_CIDR = "10.42.0.0/16"


def vswitch_cidr(zone_id: str) -> str:
    """A fixed /24 per zone (by the zone's letter), so a vSwitch never moves when other zones change."""
    index = ord(zone_id[-1]) - ord("a")
    if not 0 <= index < 26:
        raise PlacementError(f"zone {zone_id!r} does not end in a letter; give network.subnetId (a vSwitch id)")
    return f"10.42.{index}.0/24"


def offered_zones(spec: ExperimentSpec, instance_type: str, ctx: AlicloudContext) -> list[str]:
    """Zones where the type can be created with this market and an encrypted disk of the spec's category.

    GPU types are stocked in few zones, so the zone comes from this lookup rather than from a default."""
    found = alicloud.get_zones(
        available_instance_type=instance_type,
        available_resource_creation="Instance",
        available_disk_category=spec.disk_type,
        instance_charge_type="PostPaid",
        spot_strategy="SpotAsPriceGo" if spec.market == "spot" else None,
        opts=ctx.invoke_opts(),
    )
    return sorted(found.ids)


def create_vpc(name: str, tags: dict, parent: pulumi.Resource) -> alicloud.vpc.Network:
    return alicloud.vpc.Network(
        f"{name}-vpc",
        vpc_name=scoped_name(name),
        cidr_block=VPC_CIDR,
        description=f"gpulease {name}",
        tags=tags,
        opts=pulumi.ResourceOptions(parent=parent),
    )


def create_vswitch(name: str, zone_id: str, vpc_id: pulumi.Input[str], tags: dict, parent: pulumi.Resource) -> alicloud.vpc.Switch:
    return alicloud.vpc.Switch(
        f"{name}-vsw-{zone_id}",
        vswitch_name=scoped_name(f"{name}-{zone_id}"),
        vpc_id=vpc_id,
        zone_id=zone_id,
        cidr_block=vswitch_cidr(zone_id),
        description=f"gpulease {name}: {zone_id}",
        tags=tags,
        opts=pulumi.ResourceOptions(parent=parent),
    )


class AlicloudNetwork:
    """The network part of the Alibaba Cloud cloud: zone and vSwitch choice, VPC, security group, key pair."""

    def place(
        self, spec: ExperimentSpec, instance_type: str, vpc_id: str | None, ctx: AlicloudContext, required_zone: str | None
    ) -> Placement:
        """Choose the zone and vSwitch: the given vSwitch, else one of the given VPC, else a new VPC and vSwitch."""
        net = spec.network
        conflict = spec.existing_disk_zone_problem(required_zone, ctx.region) if required_zone else None
        if conflict:
            raise PlacementError(conflict)
        zones = offered_zones(spec, instance_type, ctx)
        where = f"{instance_type} ({spec.market})"
        if net.subnet_id:
            found = alicloud.vpc.get_switches(ids=[net.subnet_id], opts=ctx.invoke_opts()).vswitches
            if not found:
                raise PlacementError(f"network.subnetId: vSwitch {net.subnet_id} does not exist in {ctx.region}")
            vsw = found[0]
            if net.vpc_id and vsw.vpc_id != net.vpc_id:
                raise PlacementError(f"network.subnetId: vSwitch {net.subnet_id} is in {vsw.vpc_id}, not in network.vpcId {net.vpc_id}")
            if required_zone and vsw.zone_id != required_zone:
                raise PlacementError(f"vSwitch {net.subnet_id} is in {vsw.zone_id} but the data disk is in {required_zone}")
            if vsw.zone_id not in zones:
                raise PlacementError(f"{where} is not offered in {vsw.zone_id} (the vSwitch's zone); offered in: {', '.join(zones) or 'no zone'}")
            return Placement(zone=vsw.zone_id, vpc_id=vsw.vpc_id, subnet_id=vsw.id)
        wanted = required_zone or net.availability_zone
        if wanted:
            if wanted not in zones:
                raise PlacementError(f"{where} is not offered in {wanted}; offered in: {', '.join(zones) or 'no zone'}")
            zones = [wanted]
        if not zones:
            raise PlacementError(f"{where} is not offered in any zone of {ctx.region} right now")
        if not net.vpc_id:
            return Placement(zone=zones[0], vpc_id=None, subnet_id=None)
        for zone in zones:
            ids = sorted(alicloud.vpc.get_switches(vpc_id=net.vpc_id, zone_id=zone, opts=ctx.invoke_opts()).ids)
            if ids:
                return Placement(zone=zone, vpc_id=net.vpc_id, subnet_id=ids[0])
        raise PlacementError(
            f"no vSwitch of {net.vpc_id} is in a zone offering {where} ({', '.join(zones)}); "
            "give network.subnetId, or omit network.vpcId to let gpulease create a VPC"
        )


    def resolve_network(self, base: ExperimentSpec, ctx: AlicloudContext) -> None:
        """Nothing per stack: each run's zone and vSwitch decide it (``place``); ``check_placements`` keeps one VPC."""
        return None


    def check_placements(self, spec: StackSpec, placed: Mapping[str, PlacedExperiment]) -> None:
        vpcs = {p.placement.vpc_id for p in placed.values()}
        if len(vpcs) > 1:
            raise PlacementError(
                f"stack '{spec.stack}': the runs landed in different VPCs ({', '.join(sorted(str(x) for x in vpcs))}); "
                "they share one security group, so give network.vpcId or network.subnetId in base"
            )


    def create_network(
        self, name: str, placements: Mapping[str, Placement], tags: dict, parent: pulumi.Resource
    ) -> tuple[pulumi.Input[str], dict[str, pulumi.Input[str]]]:
        """The VPC the runs share (the one given, else one the stack creates) and a vSwitch per zone."""
        given_vpc = next(iter(placements.values())).vpc_id
        vpc_id: pulumi.Input[str] = given_vpc or create_vpc(name, tags, parent).id
        vswitches: dict[str, pulumi.Input[str]] = {}
        for p in placements.values():
            if p.subnet_id:
                vswitches[p.zone] = p.subnet_id
            elif p.zone not in vswitches:
                vswitches[p.zone] = create_vswitch(name, p.zone, vpc_id, tags, parent).id
        return vpc_id, vswitches


    def create_security_group(
        self,
        name: str, description: str, sources: list[SshSource], vpc_id: pulumi.Input[str], tags: dict,
        parent: pulumi.Resource,
    ) -> alicloud.ecs.SecurityGroup:
        """SSH only from the user's CIDRs, one described rule each; no inbound rule at all in cloud-assistant mode.

        Every rule names its source explicitly (``cidr_ip``, or ``ipv6_cidr_ip`` for an IPv6 network): a rule with
        no source is never sent."""
        opts = pulumi.ResourceOptions(parent=parent)
        sg = alicloud.ecs.SecurityGroup(
            f"{name}-sg",
            security_group_name=scoped_name(name),
            vpc_id=vpc_id,
            security_group_type="normal",
            # Sweep runs share the group; they have no reason to reach each other.
            inner_access_policy="Drop",
            description=description,
            tags=tags,
            opts=opts,
        )
        rules = [(s.rule_name, "ingress", "tcp", f"{v.SSH_PORT}/{v.SSH_PORT}", s.description,
                  {"ipv6_cidr_ip" if s.ipv6 else "cidr_ip": s.cidr}) for s in sources]
        # Egress stays open: the instance pulls packages and images and writes checkpoints to the bucket.
        rules.append((f"{name}-egress-v4", "egress", "all", "-1/-1", "all outbound", {"cidr_ip": "0.0.0.0/0"}))
        for rule_name, direction, protocol, ports, description_, source in rules:
            alicloud.ecs.SecurityGroupRule(
                rule_name, security_group_id=sg.id, type=direction, ip_protocol=protocol, port_range=ports,
                nic_type="intranet", policy="accept", priority=1, description=description_, opts=opts, **source,
            )
        return sg


    def create_key_pair(self, name: str, public_key: str, tags: dict, parent: pulumi.Resource) -> pulumi.Input[str]:
        key = alicloud.ecs.EcsKeyPair(
            f"{name}-key",
            key_pair_name=scoped_name(f"{name}-key"),
            public_key=public_key,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=parent),
        )
        return key.key_pair_name

    def session_command(self, instance_id: str, region: str) -> str:
        """How to reach the instance in the session mode (no inbound port)."""
        return f"ali-instance-cli session --instance {instance_id}"
