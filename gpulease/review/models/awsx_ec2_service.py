"""``awsx.ecs.EC2Service``: an EC2 task definition and service (``awsx_ecs``); the instances come from the
cluster's capacity providers or autoscaling groups, which the program declares itself."""

from __future__ import annotations

from typing import Any

from gpulease.review.mock_registry import ComponentBuild, ComponentModel, register_model
from gpulease.review.models import awsx_ecs


def build(b: ComponentBuild) -> dict[str, Any]:
    return awsx_ecs.service(b, "EC2")


register_model(ComponentModel("awsx:ecs:EC2Service", build, "pulumi/pulumi-awsx awsx/ecs/ec2Service.ts"))
