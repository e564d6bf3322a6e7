"""``awsx.ecr.Repository`` (pulumi/pulumi-awsx, awsx/ecr/repository.ts): an ``aws:ecr/repository:Repository`` and,
unless ``lifecyclePolicy.skip``, its ``aws:ecr/lifecyclePolicy:LifecyclePolicy`` (default: untagged images expire
after a day). Outputs (pulumi_awsx/ecr/repository.py): ``repository`` and ``lifecyclePolicy`` as resources,
``url`` the repository's URL."""

from __future__ import annotations

import json
from typing import Any

from gpulease.review.mock_ids import ACCOUNT_ID, _hex
from gpulease.review.mock_registry import ComponentBuild, ComponentModel, register_model


def build(b: ComponentBuild) -> dict[str, Any]:
    name, i = b.name, b.inputs
    repo_name = i.get("name") or f"{name}-{_hex('ecr', name, length=7)}".lower()
    repo = b.child("aws:ecr/repository:Repository", name.lower(), {
        "name": repo_name, "forceDelete": i.get("forceDelete"), "imageTagMutability": i.get("imageTagMutability"),
        "imageScanningConfiguration": i.get("imageScanningConfiguration"),
        "encryptionConfigurations": i.get("encryptionConfigurations"), "tags": i.get("tags")})
    policy_args = i.get("lifecyclePolicy") or {}
    policy = None
    if not policy_args.get("skip"):
        policy = b.child("aws:ecr/lifecyclePolicy:LifecyclePolicy", name.lower(), {
            "repository": repo_name, "policy": json.dumps({"rules": [{
                "rulePriority": 1, "description": "remove untagged images",
                "selection": {"tagStatus": "untagged", "countType": "sinceImagePushed", "countUnit": "days",
                              "countNumber": 1}, "action": {"type": "expire"}}]})}, depends={"repository": [repo]})
    return {"repository": repo.ref(), "lifecyclePolicy": policy.ref() if policy else None,
            "url": f"{ACCOUNT_ID}.dkr.ecr.{b.region}.amazonaws.com/{repo_name}"}


register_model(ComponentModel("awsx:ecr:Repository", build, "pulumi/pulumi-awsx awsx/ecr/repository.ts"))
