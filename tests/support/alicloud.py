"""Helpers for the Alibaba Cloud tests: the shared base experiment moved to Alibaba Cloud, rendered at a fixed moment."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from components.userdata import decode_user_data
from gpulease.review.render import CapturedResource, Rendering, render
from tests.support.clock import FIXED_NOW
from tests.support.specs import experiment

REGION = "cn-hangzhou"
INSTANCE = "alicloud:ecs/instance:Instance"
DISK = "alicloud:ecs/ecsDisk:EcsDisk"
DISK_ATTACHMENT = "alicloud:ecs/ecsDiskAttachment:EcsDiskAttachment"
SG = "alicloud:ecs/securityGroup:SecurityGroup"
SG_RULE = "alicloud:ecs/securityGroupRule:SecurityGroupRule"
KEY_PAIR = "alicloud:ecs/ecsKeyPair:EcsKeyPair"
VPC = "alicloud:vpc/network:Network"
VSWITCH = "alicloud:vpc/switch:Switch"
BUCKET = "alicloud:oss/bucket:Bucket"
BUCKET_ACL = "alicloud:oss/bucketAcl:BucketAcl"
BUCKET_PAB = "alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock"
BUCKET_POLICY = "alicloud:oss/bucketPolicy:BucketPolicy"
RAM_ROLE = "alicloud:ram/role:Role"
RAM_POLICY = "alicloud:ram/policy:Policy"
RAM_POLICY_ATTACHMENT = "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment"
RAM_ROLE_ATTACHMENT = "alicloud:ecs/ramRoleAttachment:RamRoleAttachment"


def ali_experiment(**overrides: Any) -> dict[str, Any]:
    """The shared valid experiment on Alibaba Cloud (an A10 24 GB type), top-level keys replaced."""
    spec = experiment(cloud="alicloud", gpu={"instanceType": "ecs.gn7i-c8g1.2xlarge"})
    spec.update(overrides)
    return spec


def render_ali(spec: dict[str, Any], *, region: str = REGION, now: datetime = FIXED_NOW, **kw: Any) -> Rendering:
    config = {"alicloud:region": region, "gpulease:experiment": spec}
    return render(config, stack=kw.pop("stack", "test"), now=now, **kw)


def ingress_rules(r: Rendering) -> list[CapturedResource]:
    return [x for x in r.of_type(SG_RULE) if x.inputs["type"] == "ingress"]


def user_data_text(instance: CapturedResource) -> str:
    return decode_user_data(instance.inputs["userData"])
