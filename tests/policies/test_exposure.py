"""public-ip-unneeded: a public address on an instance nothing reaches from the internet."""

from __future__ import annotations

import pytest

from tests.support.policy import ALI_INSTANCE, AWS_INSTANCE, ali_gpu, analyze, aws_gpu, found, res

AWS_SG = "aws:ec2/securityGroup:SecurityGroup"
ALI_SG = "alicloud:ecs/securityGroup:SecurityGroup"
ALI_RULE = "alicloud:ecs/securityGroupRule:SecurityGroupRule"
EIP = "aws:ec2/eip:Eip"


def hits(*resources) -> list[tuple]:
    return [(h[1], h[2], h[3]) for h in found(analyze(*resources), "public-ip-unneeded")]


def ali_stack(bandwidth: int, rule: dict | None) -> list:
    sg = res(ALI_SG, "sg", {"vpcId": "vpc-1"})
    out = [sg, res(ALI_INSTANCE, "box", ali_gpu(internetMaxBandwidthOut=bandwidth, securityGroups=["sg-id"]),
                   property_dependencies={"securityGroups": [sg.urn]})]
    if rule is not None:
        out.append(res(ALI_RULE, "rule", {"type": "ingress", "ipProtocol": "tcp", "portRange": "22/22",
                                          "securityGroupId": "sg-id", **rule},
                       property_dependencies={"securityGroupId": [sg.urn]}))
    return out


def test_alibaba_instance_with_bandwidth_and_no_public_ingress_is_advised():
    ((level, name, message),) = hits(*ali_stack(100, {"cidrIp": "10.0.0.0/8"}))
    assert (level, name) == ("advisory", "box")
    assert message.startswith("Instance 'box' has a public address (internetMaxBandwidthOut=100) though its security "
                              "groups let nothing in from the internet")
    assert "accepted: internet_max_bandwidth_out=0 behind a NAT gateway" in message


@pytest.mark.parametrize("bandwidth, rule", [
    (0, None),                                     # no public address
    (100, {"cidrIp": "203.0.113.7/32"}),           # SSH from the user's address: the address is needed
    (100, {}),                                     # no source at all is 0.0.0.0/0 on Alibaba Cloud
    (100, {"ipv6CidrIp": "2001:db8::7/128"}),
])
def test_no_advice_when_the_address_is_absent_or_used(bandwidth, rule):
    assert hits(*ali_stack(bandwidth, rule)) == []


def test_an_elastic_ip_on_a_closed_aws_instance_is_named():
    sg = res(AWS_SG, "closed", {"egress": [{"protocol": "-1", "cidrBlocks": ["0.0.0.0/0"]}]})
    box = res(AWS_INSTANCE, "box", aws_gpu(vpcSecurityGroupIds=["sg-id"]),
              property_dependencies={"vpcSecurityGroupIds": [sg.urn]})
    eip = res(EIP, "ip", {"instance": "i-1", "domain": "vpc"}, property_dependencies={"instance": [box.urn]})
    ((level, name, message),) = hits(sg, box, eip)
    assert (level, name) == ("advisory", "box") and "has a public address (Eip 'ip')" in message
    # Without the address, or with a group outside the stack (its rules unseen), nothing is said.
    assert hits(sg, box) == []
    assert hits(res(AWS_INSTANCE, "box", aws_gpu(vpcSecurityGroupIds=["sg-elsewhere"],
                                                 associatePublicIpAddress=True))) == []
