"""Where the instance lives and who may reach it: subnet choice, security group, SSH rules, key pair."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pulumi
import pulumi_aws as aws

from components.aws.context import AwsContext
from components.plan import Placement, PlacementError, SshSource
from gpulease.core import vocabulary as v

if TYPE_CHECKING:  # the spec's types only: at run time a cloud folder needs none of the spec's code
    from components.spec.experiment import ExperimentSpec



class AwsNetwork:
    """The network part of the AWS cloud: the VPC and subnet choice, the security group, the key pair."""

    def resolve_network(self, spec: ExperimentSpec, ctx: AwsContext) -> str:
        """The VPC every run shares: the given subnet's, the given one, else the default VPC."""
        net = spec.network
        if net.subnet_id:
            return aws.ec2.get_subnet(id=net.subnet_id, opts=ctx.invoke_opts()).vpc_id
        if net.vpc_id:
            return net.vpc_id
        return aws.ec2.get_vpc(default=True, opts=ctx.invoke_opts()).id


    def place(
        self, spec: ExperimentSpec, instance_type: str, vpc_id: str | None, ctx: AwsContext, required_az: str | None
    ) -> Placement:
        """Choose the subnet: the given one, else one in the zone the disk lives in or the first zone offering the type.

        GPU types are not offered in every zone, so the zone comes from the instance-type offerings rather than
        from whatever subnet the default VPC lists first."""
        net = spec.network
        conflict = spec.existing_disk_zone_problem(required_az, ctx.region) if required_az else None
        if conflict:
            raise PlacementError(conflict)
        if net.subnet_id:
            subnet = aws.ec2.get_subnet(id=net.subnet_id, opts=ctx.invoke_opts())
            if required_az and subnet.availability_zone != required_az:
                raise PlacementError(
                    f"subnet {net.subnet_id} is in {subnet.availability_zone} but the data disk is in {required_az}"
                )
            return Placement(zone=subnet.availability_zone, vpc_id=subnet.vpc_id, subnet_id=subnet.id)
        offered = aws.ec2.get_instance_type_offerings(
            location_type="availability-zone",
            filters=[{"name": "instance-type", "values": [instance_type]}],
            opts=ctx.invoke_opts(),
        ).locations
        zones = sorted(set(offered))
        wanted = required_az or net.availability_zone
        if wanted:
            if wanted not in zones:
                raise PlacementError(f"{instance_type} is not offered in {wanted}; offered in: {', '.join(zones) or 'no zone'}")
            zones = [wanted]
        for zone in zones:
            ids = aws.ec2.get_subnets(
                filters=[{"name": "vpc-id", "values": [vpc_id]}, {"name": "availability-zone", "values": [zone]}],
                opts=ctx.invoke_opts(),
            ).ids
            if ids:
                return Placement(zone=zone, vpc_id=vpc_id, subnet_id=sorted(ids)[0])
        raise PlacementError(f"no subnet of {vpc_id} is in a zone offering {instance_type} ({', '.join(zones) or 'none'})")


    def create_network(
        self, name: str, placements: Mapping[str, Placement], tags: dict, parent: pulumi.Resource
    ) -> tuple[pulumi.Input[str], dict[str, pulumi.Input[str]]]:
        """Nothing to create: the lookups found the VPC and a subnet in every zone."""
        return str(next(iter(placements.values())).vpc_id), {p.zone: str(p.subnet_id) for p in placements.values()}


    def create_security_group(
        self,
        name: str, description: str, sources: list[SshSource], vpc_id: pulumi.Input[str], tags: dict,
        parent: pulumi.Resource,
    ) -> aws.ec2.SecurityGroup:
        """SSH only from the user's CIDRs, one described rule each; no ingress at all in ssm mode.

        Rules are separate ``aws.vpc`` rule resources (one per CIDR, each described and tagged) rather than inline
        blocks, so a review shows exactly which address was added or removed."""
        opts = pulumi.ResourceOptions(parent=parent)
        sg = aws.ec2.SecurityGroup(f"{name}-sg", vpc_id=vpc_id, description=description, tags=tags, opts=opts)
        for source in sources:
            aws.vpc.SecurityGroupIngressRule(
                source.rule_name,
                security_group_id=sg.id,
                ip_protocol="tcp",
                from_port=v.SSH_PORT,
                to_port=v.SSH_PORT,
                description=source.description,
                tags=tags,
                opts=opts,
                **({"cidr_ipv6": source.cidr} if source.ipv6 else {"cidr_ipv4": source.cidr}),
            )
        # Egress stays open: the instance pulls packages and images and writes checkpoints to the bucket.
        for label, family in (("v4", {"cidr_ipv4": "0.0.0.0/0"}), ("v6", {"cidr_ipv6": "::/0"})):
            aws.vpc.SecurityGroupEgressRule(
                f"{name}-egress-{label}", security_group_id=sg.id, ip_protocol="-1", description="all outbound", tags=tags,
                opts=opts, **family,
            )
        return sg


    def create_key_pair(self, name: str, public_key: str, tags: dict, parent: pulumi.Resource) -> pulumi.Input[str]:
        key = aws.ec2.KeyPair(f"{name}-key", public_key=public_key, tags=tags, opts=pulumi.ResourceOptions(parent=parent))
        return key.key_name

    def session_command(self, instance_id: str, region: str) -> str:
        """How to reach the instance in the session mode (no inbound port)."""
        return f"aws ssm start-session --target {instance_id} --region {region}"
