"""``awsx.lb.ApplicationLoadBalancer`` and ``awsx.lb.NetworkLoadBalancer`` (pulumi/pulumi-awsx,
awsx/lb/applicationLoadBalancer.ts, networkLoadBalancer.ts): the ``aws:lb/loadBalancer:LoadBalancer`` in the given
subnets (or the default VPC's), for the application one a security group open on its listener ports, a default
target group and the listeners (default: one on port 80, HTTP or TCP). Outputs (pulumi_awsx/lb/*.py):
``loadBalancer``, ``defaultTargetGroup``, ``listeners``, ``defaultSecurityGroup`` as resources, ``vpcId``."""

from __future__ import annotations

from typing import Any

from gpulease.review.mock_ids import _hex
from gpulease.review.mock_registry import ComponentBuild, ComponentModel, register_model


def _balancer(b: ComponentBuild, kind: str) -> dict[str, Any]:
    name, i = b.name, b.inputs
    protocol = "HTTP" if kind == "application" else "TCP"
    vpc_id = i.get("vpcId") or f"vpc-{_hex('vpc', b.region)}"
    listeners = i.get("listeners") or [i.get("listener") or {"port": 80, "protocol": protocol}]
    sg = None
    if kind == "application" and not (i.get("defaultSecurityGroup") or {}).get("skip"):
        sg = b.child("aws:ec2/securityGroup:SecurityGroup", name, {"vpcId": vpc_id, "ingress": [
            {"fromPort": int(x.get("port") or 80), "toPort": int(x.get("port") or 80), "protocol": "tcp",
             "cidrBlocks": ["0.0.0.0/0"]} for x in listeners],
            "egress": [{"fromPort": 0, "toPort": 0, "protocol": "-1", "cidrBlocks": ["0.0.0.0/0"]}]})
    lb = b.child("aws:lb/loadBalancer:LoadBalancer", name, {
        "loadBalancerType": kind, "internal": i.get("internal"), "subnets": i.get("subnetIds") or i.get("subnets"),
        "securityGroups": [*(i.get("securityGroups") or []), *([sg.id] if sg else [])], "tags": i.get("tags")})
    group_args = i.get("defaultTargetGroup") or {}
    group = b.child("aws:lb/targetGroup:TargetGroup", name, {
        "port": group_args.get("port") or 80, "protocol": group_args.get("protocol") or protocol,
        "targetType": group_args.get("targetType") or "ip", "vpcId": vpc_id})
    made = [b.child("aws:lb/listener:Listener", f"{name}-{n}", {
        "loadBalancerArn": lb.outputs.get("arn") or lb.id, "port": x.get("port") or 80,
        "protocol": x.get("protocol") or protocol,
        "defaultActions": x.get("defaultActions") or [{"type": "forward", "targetGroupArn": group.id}]},
        depends={"loadBalancerArn": [lb]}) for n, x in enumerate(listeners)]
    out = {"loadBalancer": lb.ref(), "defaultTargetGroup": group.ref(), "listeners": [x.ref() for x in made],
           "vpcId": vpc_id}
    if kind == "application":
        out["defaultSecurityGroup"] = sg.ref() if sg else None
    return out


def application(b: ComponentBuild) -> dict[str, Any]:
    return _balancer(b, "application")


def network(b: ComponentBuild) -> dict[str, Any]:
    return _balancer(b, "network")


register_model(ComponentModel("awsx:lb:ApplicationLoadBalancer", application,
                              "pulumi/pulumi-awsx awsx/lb/applicationLoadBalancer.ts"))
register_model(ComponentModel("awsx:lb:NetworkLoadBalancer", network, "pulumi/pulumi-awsx awsx/lb/networkLoadBalancer.ts"))
