"""A valid experiment spec to vary, and rendering one under mocks at the test clock's moment."""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from gpulease.review.render import Rendering, render
from tests.support.clock import FIXED_NOW

BASE_EXPERIMENT: dict[str, Any] = {
    "name": "exp1",
    "owner": "alice@example.com",
    "project": "llm-finetune",
    "costCenter": "ml-research",
    "budgetUsd": 40,
    "gpu": {"instanceType": "g5.xlarge"},
    "maxRuntimeHours": 8,
    "ssh": {
        "allowedCidrs": ["203.0.113.7/32", "2001:db8:1234::/48"],
        "publicKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA+hBi33bSLRNsgbKP5NSFs+fQAUzBEl3aSwo5F2Lh5+ alice@laptop",
    },
    "checkpoints": {"prefix": "ckpt/", "intervalMinutes": 15},
}


ALI_PUBLIC_KEY = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBNjPdeYpH2wmOQ6Imsq2ysuaNgrWKzp4ujPFju9VNc+jSevpzl9iiZaa8cl1AjVRoZl5Ftn8H1x4BXf92QlfqKQ= alice@laptop"
"""Alibaba Cloud's ImportKeyPair takes rsa, dsa and ecdsa keys, not ed25519: the base spec moved to alicloud uses this."""


def experiment(**overrides: Any) -> dict[str, Any]:
    """A valid AWS experiment spec with top-level keys replaced (on ``cloud="alicloud"`` with an ECDSA key)."""
    spec = copy.deepcopy(BASE_EXPERIMENT)
    if overrides.get("cloud") == "alicloud":
        spec["ssh"]["publicKey"] = ALI_PUBLIC_KEY
    spec.update(copy.deepcopy(overrides))
    return spec


def render_experiment(spec: dict[str, Any], *, region: str = "us-east-1", now: datetime = FIXED_NOW, **kw: Any) -> Rendering:
    config = {"aws:region": region, "gpulease:experiment": spec}
    return render(config, stack=kw.pop("stack", "test"), now=now, **kw)
