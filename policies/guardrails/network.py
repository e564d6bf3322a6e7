"""ssh-ingress-restricted: SSH (or, by config, any port) is never open to the internet.

Checked on every way of writing an ingress rule: inline ``ingress`` blocks of ``aws.ec2.SecurityGroup``,
``aws.ec2.SecurityGroupRule`` (type ingress), ``aws.vpc.SecurityGroupIngressRule`` and
``alicloud.ecs.SecurityGroupRule`` (type ingress, policy accept; with neither ``cidrIp`` / ``ipv6CidrIp`` nor a
source group nor a prefix list, Alibaba Cloud opens it to 0.0.0.0/0). A rule is open when its source is broader than
``minPrefixV4`` / ``minPrefixV6`` (0.0.0.0/0 and ::/0 always are) and its protocol and port range include a
watched port (``ports``, default 22; ``allPorts`` watches every port). Protocol ``-1`` / ``all`` means every
port.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from gpulease.core import resources as rt
from gpulease.core import vocabulary as v

from . import common as c

TCP = ("tcp", "6")
ALL = ("-1", "all")


def _ports_hit(protocol: Any, low: Any, high: Any, ports: list[int], all_ports: bool) -> str | None:
    """A description of the watched ports a rule opens, or None."""
    proto = str(protocol).lower() if protocol is not None else "tcp"
    if proto in ALL:
        return "every port"
    if all_ports:
        return f"ports {int(low) if low is not None else 0}-{int(high) if high is not None else 65535}"
    if proto not in TCP:
        return None
    hit = c.port_range_covers(rt.number(low), rt.number(high), ports)
    return f"port {', '.join(map(str, hit))}" if hit else None


def _alicloud_range(port_range: Any) -> tuple[float | None, float | None]:
    if not isinstance(port_range, str) or "/" not in port_range:
        return None, None
    low, high = port_range.split("/", 1)
    return rt.number(low), rt.number(high)


def _ssh_ingress(args: ResourceValidationArgs, report: ReportViolation) -> None:
    config = args.get_config()
    ports = [int(p) for p in c.config_value(config, "ports", [v.SSH_PORT])]
    all_ports = bool(c.config_value(config, "allPorts", False))
    min_v4 = int(c.config_value(config, "minPrefixV4", v.MIN_SSH_PREFIX_V4))
    min_v6 = int(c.config_value(config, "minPrefixV6", v.MIN_SSH_PREFIX_V6))
    what = c.display(args.resource_type, args.name)
    props = args.props

    def judge(label: str, cidrs: list[Any], protocol: Any, low: Any, high: Any) -> None:
        if any(x is c.UNKNOWN for x in (protocol, low, high)):
            return
        opened = _ports_hit(protocol, low, high, ports, all_ports)
        if not opened:
            return
        for cidr in cidrs:
            why = c.broad_cidr(cidr, min_v4, min_v6)
            if why:
                # An IPv6 source is answered with an IPv6 example (a /128), an IPv4 one with a /32.
                example = "2001:db8::7/128" if ":" in str(cidr) else "203.0.113.7/32"
                report(f"{what}{label} opens {opened} to {cidr} ({why}); accepted: your own addresses, e.g. "
                       f"{example}, or no inbound rule (SSM / Cloud Assistant)")

    if args.resource_type == rt.AWS_SECURITY_GROUP:
        for i, rule in enumerate(c.items(props, "ingress")):
            if rule is c.UNKNOWN:
                continue
            cidrs = [*c.items(rule, "cidrBlocks"), *c.items(rule, "ipv6CidrBlocks")]
            judge(f" ingress[{i}]", cidrs, c.known(rule, "protocol"), c.known(rule, "fromPort"), c.known(rule, "toPort"))
    elif args.resource_type == rt.AWS_SECURITY_GROUP_RULE:
        if c.known(props, "type") != "ingress":
            return
        cidrs = [*c.items(props, "cidrBlocks"), *c.items(props, "ipv6CidrBlocks")]
        judge("", cidrs, c.known(props, "protocol"), c.known(props, "fromPort"), c.known(props, "toPort"))
    elif args.resource_type == rt.AWS_INGRESS_RULE:
        cidrs = [x for x in (c.known(props, "cidrIpv4"), c.known(props, "cidrIpv6")) if x is not None]
        judge("", cidrs, c.known(props, "ipProtocol"), c.known(props, "fromPort"), c.known(props, "toPort"))
    elif args.resource_type == rt.ALI_SECURITY_GROUP_RULE:
        if c.known(props, "type") != "ingress" or str(c.known(props, "policy", default="accept")).lower() == "drop":
            return
        # The source is one of cidrIp, ipv6CidrIp, a source group or a prefix list (pulumi_alicloud
        # ecs.SecurityGroupRule: "You must specify one of the following field: cidr_ip, source_security_group_id,
        # prefix_list_id, ipv6_cidr_ip"); with none of them Alibaba Cloud opens the rule to 0.0.0.0/0.
        cidrs = [x for x in (c.known(props, "cidrIp"), c.known(props, "ipv6CidrIp")) if x is not None]
        other_source = c.known(props, "sourceSecurityGroupId") or c.known(props, "prefixListId")
        if not cidrs and other_source is None:
            cidrs = ["0.0.0.0/0"]  # Alibaba's default source
        low, high = _alicloud_range(c.known(props, "portRange", default="-1/-1"))
        judge("", cidrs, c.known(props, "ipProtocol"), low, high)


ssh_ingress_restricted = c.judges(ResourceValidationPolicy(
    name="ssh-ingress-restricted",
    description="No security group rule opens SSH (or a watched port) to the internet.",
    validate=_ssh_ingress,
    enforcement_level=c.level("mandatory"),
    config_schema=c.schema(
        {
            "ports": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 65535},
                      "default": [v.SSH_PORT], "description": "TCP ports that must not be open to the internet."},
            "allPorts": {"type": "boolean", "default": False,
                         "description": "Watch every port and protocol, not only the listed ports."},
            "minPrefixV4": {"type": "integer", "minimum": 0, "maximum": 32, "default": v.MIN_SSH_PREFIX_V4,
                            "description": "IPv4 sources shorter than this prefix count as the internet."},
            "minPrefixV6": {"type": "integer", "minimum": 0, "maximum": 128, "default": v.MIN_SSH_PREFIX_V6,
                            "description": "IPv6 sources shorter than this prefix count as the internet."},
        }
    ),
), (rt.AWS_SECURITY_GROUP, rt.AWS_SECURITY_GROUP_RULE, rt.AWS_INGRESS_RULE, rt.ALI_SECURITY_GROUP_RULE))

POLICIES = [ssh_ingress_restricted]
