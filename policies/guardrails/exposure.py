"""An instance reachable from the internet for no reason.

``public-ip-unneeded`` (stack, advisory): an instance (EC2 instance or spot request, Alibaba ECS instance or
instance set) gets a public address (``associate_public_ip_address``, an Elastic IP or EIP association, Alibaba
``internet_max_bandwidth_out`` above 0) although its security groups let nothing in from the internet: the kit in
``ssm`` / ``cloud-assistant`` mode, or any instance with no inbound rule from a public source. Sessions then go
through AWS Systems Manager or Alibaba Cloud Assistant, which need no public address on the instance; the address
only serves egress where the subnet has no NAT gateway, and exposes the instance to any rule added later. Judged
only when every security group the instance names is in the stack.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from pulumi_policy import ReportViolation, StackValidationArgs, StackValidationPolicy

from gpulease.core import resources as rt
from gpulease.core.compute import UNKNOWN, read, read_all
from gpulease.core.compute.units import Registered, refers

from . import common as c

INSTANCE_FORMS = (rt.AWS_INSTANCE, rt.AWS_SPOT_REQUEST, rt.ALI_INSTANCE, rt.ALI_INSTANCE_SET)
SECURITY_GROUPS = ("aws:ec2/securityGroup:SecurityGroup", "alicloud:ecs/securityGroup:SecurityGroup")
RULES = (rt.AWS_SECURITY_GROUP_RULE, rt.AWS_INGRESS_RULE, rt.ALI_SECURITY_GROUP_RULE)
ADDRESSES = (rt.AWS_EIP, rt.AWS_EIP_ASSOCIATION, rt.ALI_EIP_ASSOCIATION)
FIX = {
    "aws": "associate_public_ip_address=false in a subnet with a NAT gateway or VPC endpoints (Session Manager "
    "needs none on the instance: https://docs.aws.amazon.com/systems-manager/latest/userguide/setup-create-vpc.html)",
    "alicloud": "internet_max_bandwidth_out=0 behind a NAT gateway (Session Manager and Cloud Assistant need no "
    "public address: https://www.alibabacloud.com/help/en/ecs/user-guide/connect-to-an-instance-by-using-session-manager)",
}


INTERNAL = tuple(ipaddress.ip_network(n) for n in (
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
    "fc00::/7", "fe80::/10", "::1/128",
))
"""Sources inside a network (RFC 1918, shared address space RFC 6598, loopback, link-local, IPv6 ULA): anything
else is the internet, documentation ranges such as 203.0.113.0/24 included (they stand for real addresses)."""


def _public_source(cidr: Any) -> bool:
    if cidr is UNKNOWN:
        return True  # not known yet: counted as open, so no finding rests on it
    try:
        net = ipaddress.ip_network(str(cidr), strict=False)
    except ValueError:
        return False
    return not any(net.version == inner.version and net.subnet_of(inner) for inner in INTERNAL)  # type: ignore[arg-type]


def _group_opens(group: Registered, rules: list[Registered]) -> bool:
    """Whether anything in the stack lets traffic from a public source into the group."""
    for rule in read_all(group.props, "ingress.*"):
        if any(_public_source(x) for key in ("cidrBlocks", "ipv6CidrBlocks") for x in read_all(rule, f"{key}.*")):
            return True
        if read_all(rule, "prefixListIds.*"):
            return True
    for rule in rules:
        if not refers(rule, read(rule.props, "securityGroupId"), "securityGroupId", group):
            continue
        if rule.type == rt.AWS_SECURITY_GROUP_RULE:
            if read(rule.props, "type") == "ingress" and (
                    any(_public_source(x) for key in ("cidrBlocks", "ipv6CidrBlocks")
                        for x in read_all(rule.props, f"{key}.*")) or read_all(rule.props, "prefixListIds.*")):
                return True
        elif rule.type == rt.AWS_INGRESS_RULE:
            if any(_public_source(x) for key in ("cidrIpv4", "cidrIpv6") if (x := read(rule.props, key)) is not None) \
                    or read(rule.props, "prefixListId") is not None:
                return True
        elif read(rule.props, "type") == "ingress" and str(read(rule.props, "policy", "accept")).lower() != "drop":
            sources = [x for key in ("cidrIp", "ipv6CidrIp") if (x := read(rule.props, key)) is not None]
            other = read(rule.props, "sourceSecurityGroupId") or read(rule.props, "prefixListId")
            if (not sources and other is None) or any(_public_source(x) for x in sources):
                return True  # no source at all means 0.0.0.0/0 on Alibaba Cloud (see network.py)
    return False


def _groups(inst: Registered, groups: list[Registered]) -> list[Registered] | None:
    """The instance's security groups, or None when it names one that is not in the stack."""
    form = inst.form
    found: list[Registered] = []
    named_any = False
    for path in form.security_groups if form else ():
        key = path.split(".")[0]
        named = read_all(inst.props, f"{path}.*") or read_all(inst.props, path)
        for value in named:
            named_any = True
            hits = [g for g in groups if refers(inst, value, key, g)]
            if not hits:
                return None
            found += [g for g in hits if g not in found]
    return found if named_any else None  # none named: the VPC's default group, which the stack does not show


def _address(inst: Registered, addresses: list[Registered]) -> str | None:
    """How the instance gets a public address, or None."""
    for path in inst.form.public_ip if inst.form else ():
        value = read(inst.props, path)
        if value is True:
            return f"{path}=true"
        if not isinstance(value, bool) and (number := rt.number(value) or 0) > 0:
            return f"{path}={number:g}"
    for addr in addresses:
        key = "instance" if addr.type == rt.AWS_EIP else "instanceId"
        if refers(addr, read(addr.props, key), key, inst):
            return f"{c.display(addr.type, addr.name)}"
    return None


def _public_ip(args: StackValidationArgs, report: ReportViolation) -> None:
    stack = [c.registered(r) for r in args.resources]
    groups = [r for r in stack if r.type in SECURITY_GROUPS]
    rules = [r for r in stack if r.type in RULES]
    addresses = [r for r in stack if r.type in ADDRESSES]
    config = args.get_config()
    for inst in stack:
        if inst.type not in INSTANCE_FORMS or c.listed(config, "acceptInstances", inst.urn):
            continue
        how = _address(inst, addresses)
        mine = _groups(inst, groups)
        if how is None or mine is None or any(_group_opens(g, rules) for g in mine):
            continue
        # The kit's instance is a child of its component (``gpulease:<cloud>:...`` first in the URN's type chain);
        # a foreign program carrying the kit's tags is not the kit.
        kit = inst.urn.split("::")[2].startswith("gpulease:") if inst.urn.count("::") >= 3 else False
        why = " (the kit's ssm / cloud-assistant mode)" if kit else ""
        cloud = "aws" if inst.type.startswith("aws:") else "alicloud"
        report(f"{c.display(inst.type, inst.name)} has a public address ({how}) though its security groups let "
               f"nothing in from the internet{why}: the address is needed only for egress without a NAT gateway, and "
               f"exposes the instance to any rule added later; accepted: {FIX[cloud]}", inst.urn)


public_ip_unneeded = c.judges(StackValidationPolicy(
    name="public-ip-unneeded",
    description="An instance no inbound rule reaches from the internet gets no public address.",
    validate=_public_ip,
    enforcement_level=c.level("advisory"),
    config_schema=c.schema(
        {
            "acceptInstances": {"type": "array", "items": {"type": "string"}, "default": [],
                                "description": "Instances accepted with a public address (no NAT gateway in reach): " + c.ACCEPT_FORMS},
        }
    ),
), (*INSTANCE_FORMS, *SECURITY_GROUPS, *RULES, *ADDRESSES))

POLICIES = [public_ip_unneeded]
