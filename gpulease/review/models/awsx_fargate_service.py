"""``awsx.ecs.FargateService``: a Fargate task definition and service (``awsx_ecs``)."""

from __future__ import annotations

from typing import Any

from gpulease.review.mock_registry import ComponentBuild, ComponentModel, register_model
from gpulease.review.models import awsx_ecs


def build(b: ComponentBuild) -> dict[str, Any]:
    return awsx_ecs.service(b, "FARGATE")


register_model(ComponentModel("awsx:ecs:FargateService", build, "pulumi/pulumi-awsx awsx/ecs/fargateService.ts"))
