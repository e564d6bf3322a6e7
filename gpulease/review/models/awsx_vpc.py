"""``awsx.ec2.Vpc`` (pulumi/pulumi-awsx, awsx/ec2/vpc.ts): a VPC (default CIDR 10.0.0.0/16), an internet gateway,
for each availability zone (default 3, ``numberOfAvailabilityZones`` or ``availabilityZoneNames``) a public and a
private subnet (or the ``subnetSpecs`` types) each with its route table, association and default route, and the NAT
gateways of ``natGateways.strategy`` (default ``OnePerAz``; ``Single``; ``None``) with their Elastic IPs.

Outputs (pulumi_awsx/ec2/vpc.py): ``vpcId`` and ``publicSubnetIds``/``privateSubnetIds``/``isolatedSubnetIds`` as
strings, ``vpc``, ``subnets``, ``routeTables``, ``natGateways``, ``eips`` ... as resources. The CIDR of each subnet
follows the same split of the VPC's block per zone (private, then public); awsx's own sizes may differ, which no
rule reads. VPC endpoints are not modelled.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from gpulease.review.mock_registry import Child, ComponentBuild, ComponentModel, register_model


def build(b: ComponentBuild) -> dict[str, Any]:
    name, i = b.name, b.inputs
    cidr = i.get("cidrBlock") or "10.0.0.0/16"
    zones = i.get("availabilityZoneNames") or [f"{b.region}{letter}" for letter in "abcdef"]
    zones = list(zones)[: int(i.get("numberOfAvailabilityZones") or 3)]
    tags = i.get("tags") or {}
    vpc = b.child("aws:ec2/vpc:Vpc", name, {"cidrBlock": cidr, "enableDnsHostnames": i.get("enableDnsHostnames", True),
                                            "enableDnsSupport": i.get("enableDnsSupport", True),
                                            "instanceTenancy": i.get("instanceTenancy"), "tags": {**tags, "Name": name}})
    igw = b.child("aws:ec2/internetGateway:InternetGateway", name, {"vpcId": vpc.id, "tags": {**tags, "Name": name}},
                  depends={"vpcId": [vpc]})
    types = [str(s.get("type")).lower() for s in i.get("subnetSpecs") or []] or ["private", "public"]
    strategy = str((i.get("natGateways") or {}).get("strategy") or "OnePerAz").lower()
    blocks = list(ipaddress.ip_network(cidr, strict=False).subnets(prefixlen_diff=2))
    made: dict[str, list[Child]] = {"public": [], "private": [], "isolated": []}
    tables, routes, assocs, nats, eips = [], [], [], [], []
    for z, zone in enumerate(zones):
        parts = list(blocks[z % len(blocks)].subnets(prefixlen_diff=1))
        quarter = list(parts[1].subnets(prefixlen_diff=1))
        cidrs = {"private": parts[0], "public": quarter[0], "isolated": quarter[1]}
        for kind in sorted(types, key=lambda t: t != "public"):  # public first: the NAT gateway lives there
            resource = f"{name}-{kind}-{z + 1}"
            subnet = b.child("aws:ec2/subnet:Subnet", resource, {
                "vpcId": vpc.id, "availabilityZone": zone, "mapPublicIpOnLaunch": kind == "public",
                "cidrBlock": str(cidrs.get(kind, quarter[1])), "assignIpv6AddressOnCreation": False,
                "tags": {**tags, "Name": resource, "SubnetType": kind.capitalize()}}, depends={"vpcId": [vpc]})
            made.setdefault(kind, []).append(subnet)
            table = b.child("aws:ec2/routeTable:RouteTable", resource, {"vpcId": vpc.id, "tags": {
                **tags, "Name": resource, "SubnetType": kind.capitalize()}})
            tables.append(table)
            assocs.append(b.child("aws:ec2/routeTableAssociation:RouteTableAssociation", resource,
                                  {"routeTableId": table.id, "subnetId": subnet.id}))
            if kind == "public" and (strategy == "oneperaz" or (strategy == "single" and not nats)):
                eip = b.child("aws:ec2/eip:Eip", f"{name}-{z + 1}", {"tags": {**tags, "Name": f"{name}-{z + 1}"}})
                eips.append(eip)
                nats.append(b.child("aws:ec2/natGateway:NatGateway", f"{name}-{z + 1}", {
                    "subnetId": subnet.id, "allocationId": eip.outputs.get("allocationId"),
                    "tags": {**tags, "Name": f"{name}-{z + 1}"}}))
            if kind == "public":
                routes.append(b.child("aws:ec2/route:Route", resource, {
                    "routeTableId": table.id, "gatewayId": igw.id, "destinationCidrBlock": "0.0.0.0/0"}))
            elif kind == "private" and nats:
                routes.append(b.child("aws:ec2/route:Route", resource, {
                    "routeTableId": table.id, "natGatewayId": nats[0 if strategy == "single" else -1].id,
                    "destinationCidrBlock": "0.0.0.0/0"}))
    refs = lambda items: [c.ref() for c in items]  # noqa: E731 - a local shorthand
    return {
        "vpcId": vpc.id, "vpc": vpc.ref(), "internetGateway": igw.ref(),
        "publicSubnetIds": [s.id for s in made["public"]], "privateSubnetIds": [s.id for s in made["private"]],
        "isolatedSubnetIds": [s.id for s in made["isolated"]], "publicSubnets": refs(made["public"]),
        "privateSubnets": refs(made["private"]), "isolatedSubnets": refs(made["isolated"]),
        "subnets": refs([s for kind in made.values() for s in kind]), "routeTables": refs(tables),
        "routeTableAssociations": refs(assocs), "routes": refs(routes), "natGateways": refs(nats), "eips": refs(eips),
        "vpcEndpoints": [], "subnetLayout": [{"type": t.capitalize()} for t in types],
    }


register_model(ComponentModel("awsx:ec2:Vpc", build, "pulumi/pulumi-awsx awsx/ec2/vpc.ts"))
