"""ssh-ingress-restricted on every way of writing an ingress rule, on both clouds."""

from __future__ import annotations

import pytest

from tests.support.policy import analyze, found, res, tags

AWS_SG = "aws:ec2/securityGroup:SecurityGroup"
AWS_SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
AWS_INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
ALI_RULE = "alicloud:ecs/securityGroupRule:SecurityGroupRule"
ACCEPTED = "accepted: your own addresses, e.g. 203.0.113.7/32, or no inbound rule (SSM / Cloud Assistant)"
ACCEPTED_V6 = "accepted: your own addresses, e.g. 2001:db8::7/128, or no inbound rule (SSM / Cloud Assistant)"


def ssh_findings(*resources, config=None) -> list[tuple]:
    return found(analyze(*resources, config=config), "ssh-ingress-restricted")


def test_inline_ingress_open_to_the_world():
    sg = res(AWS_SG, "sg", {"tags": tags(), "ingress": [
        {"protocol": "tcp", "fromPort": 443, "toPort": 443, "cidrBlocks": ["0.0.0.0/0"]},
        {"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": ["203.0.113.7/32"]},
        {"protocol": "tcp", "fromPort": 20, "toPort": 30, "ipv6CidrBlocks": ["::/0"]},
    ]})
    assert ssh_findings(sg) == [
        ("ssh-ingress-restricted", "mandatory", "sg",
         f"SecurityGroup 'sg' ingress[2] opens port 22 to ::/0 (the whole internet); {ACCEPTED_V6}")
    ]
    # An IPv6 source is answered with an IPv6 /128, never an IPv4 /32.
    assert "/32" not in ssh_findings(sg)[0][3]


def test_all_protocols_include_ssh():
    sg = res(AWS_SG, "sg", {"tags": tags(), "ingress": [{"protocol": "-1", "fromPort": 0, "toPort": 0,
                                                         "cidrBlocks": ["0.0.0.0/0"]}]})
    (hit,) = ssh_findings(sg)
    assert "opens every port to 0.0.0.0/0 (the whole internet)" in hit[3]


def test_security_group_rule_ingress_only():
    ingress = res(AWS_SG_RULE, "rule", {"type": "ingress", "protocol": "tcp", "fromPort": 0, "toPort": 1024,
                                        "cidrBlocks": ["10.0.0.0/8"], "securityGroupId": "sg-1"})
    egress = res(AWS_SG_RULE, "out", {"type": "egress", "protocol": "tcp", "fromPort": 22, "toPort": 22,
                                      "cidrBlocks": ["0.0.0.0/0"], "securityGroupId": "sg-1"})
    assert ssh_findings(ingress, egress) == [
        ("ssh-ingress-restricted", "mandatory", "rule",
         f"SecurityGroupRule 'rule' opens port 22 to 10.0.0.0/8 (a /8 (more than a /16)); {ACCEPTED}")
    ]


@pytest.mark.parametrize(
    ("inputs", "opened"),
    [
        ({"ipProtocol": "tcp", "fromPort": 22, "toPort": 22, "cidrIpv4": "0.0.0.0/0"}, "port 22 to 0.0.0.0/0"),
        ({"ipProtocol": "-1", "cidrIpv6": "::/0"}, "every port to ::/0"),
        ({"ipProtocol": "6", "fromPort": 1, "toPort": 65535, "cidrIpv4": "0.0.0.0/0"}, "port 22 to 0.0.0.0/0"),
    ],
)
def test_vpc_ingress_rule_variants(inputs, opened):
    rule = res(AWS_INGRESS, "r", {"securityGroupId": "sg-1", "tags": tags(), **inputs})
    (hit,) = ssh_findings(rule)
    assert hit[:3] == ("ssh-ingress-restricted", "mandatory", "r")
    assert f"SecurityGroupIngressRule 'r' opens {opened}" in hit[3]


def test_named_addresses_and_other_ports_pass():
    ok = [
        res(AWS_INGRESS, "mine", {"ipProtocol": "tcp", "fromPort": 22, "toPort": 22, "cidrIpv4": "203.0.113.7/32",
                                  "tags": tags()}),
        res(AWS_INGRESS, "v6", {"ipProtocol": "tcp", "fromPort": 22, "toPort": 22, "cidrIpv6": "2001:db8:1234::/48",
                                "tags": tags()}),
        res(AWS_INGRESS, "https", {"ipProtocol": "tcp", "fromPort": 443, "toPort": 443, "cidrIpv4": "0.0.0.0/0",
                                   "tags": tags()}),
        res(AWS_INGRESS, "dns", {"ipProtocol": "udp", "fromPort": 22, "toPort": 22, "cidrIpv4": "0.0.0.0/0",
                                 "tags": tags()}),
    ]
    assert ssh_findings(*ok) == []


def test_watched_ports_come_from_config():
    https = res(AWS_INGRESS, "https", {"ipProtocol": "tcp", "fromPort": 443, "toPort": 443, "cidrIpv4": "0.0.0.0/0",
                                       "tags": tags()})
    assert [h[2] for h in ssh_findings(https, config={"ssh-ingress-restricted": {"ports": [22, 443]}})] == ["https"]
    (hit,) = ssh_findings(https, config={"ssh-ingress-restricted": {"allPorts": True}})
    assert "opens ports 443-443 to 0.0.0.0/0" in hit[3]


def test_alicloud_rule_without_cidr_is_open_to_the_world():
    rule = res(ALI_RULE, "ssh", {"type": "ingress", "ipProtocol": "tcp", "portRange": "22/22",
                                 "securityGroupId": "sg-bp1", "nicType": "intranet"})
    assert ssh_findings(rule) == [
        ("ssh-ingress-restricted", "mandatory", "ssh",
         f"SecurityGroupRule 'ssh' opens port 22 to 0.0.0.0/0 (the whole internet); {ACCEPTED}")
    ]


def test_alicloud_variants():
    all_ports = res(ALI_RULE, "all", {"type": "ingress", "ipProtocol": "all", "portRange": "-1/-1",
                                      "cidrIp": "0.0.0.0/0", "securityGroupId": "sg-bp1"})
    dropped = res(ALI_RULE, "drop", {"type": "ingress", "ipProtocol": "tcp", "portRange": "22/22", "policy": "drop",
                                     "cidrIp": "0.0.0.0/0", "securityGroupId": "sg-bp1"})
    from_group = res(ALI_RULE, "group", {"type": "ingress", "ipProtocol": "tcp", "portRange": "22/22",
                                         "sourceSecurityGroupId": "sg-bp2", "securityGroupId": "sg-bp1"})
    egress = res(ALI_RULE, "egress", {"type": "egress", "ipProtocol": "all", "portRange": "-1/-1",
                                      "cidrIp": "0.0.0.0/0", "securityGroupId": "sg-bp1"})
    ranged = res(ALI_RULE, "range", {"type": "ingress", "ipProtocol": "tcp", "portRange": "1/1024",
                                     "cidrIp": "0.0.0.0/0", "securityGroupId": "sg-bp1"})
    assert [(h[2], h[3].split(" to ")[0]) for h in ssh_findings(all_ports, dropped, from_group, egress, ranged)] == [
        ("all", "SecurityGroupRule 'all' opens every port"),
        ("range", "SecurityGroupRule 'range' opens port 22"),
    ]


def test_alicloud_ipv6_sources_are_read_from_ipv6_cidr_ip():
    # Alibaba writes an IPv6 source into ipv6CidrIp (cidrIp stays empty): a narrow one passes, ::/0 and a /32 fail.
    def rule(name: str, cidr: str):
        return res(ALI_RULE, name, {"type": "ingress", "ipProtocol": "tcp", "portRange": "22/22",
                                    "ipv6CidrIp": cidr, "securityGroupId": "sg-bp1"})
    assert ssh_findings(rule("mine", "2001:db8:1234::/48")) == []
    assert [(h[2], h[3].split(" (")[0]) for h in ssh_findings(rule("world", "::/0"), rule("wide", "2001:db8::/32"))] == [
        ("world", "SecurityGroupRule 'world' opens port 22 to ::/0"),
        ("wide", "SecurityGroupRule 'wide' opens port 22 to 2001:db8::/32"),
    ]
