"""Shared test helpers: a valid experiment spec to vary, and rendering under mocks at a fixed moment."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gpulease.render import Rendering, render

ROOT = Path(__file__).resolve().parent.parent
STACKS_DIR = ROOT / "stacks"
FIXED_NOW = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)

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
        "publicKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ1xTQn3XwHkq7BpH0Qm8rXh0bLZ2n1m9Wc8v0sF3Zq alice@laptop",
    },
    "checkpoints": {"prefix": "ckpt/", "intervalMinutes": 15},
}


def experiment(**overrides: Any) -> dict[str, Any]:
    """A valid AWS experiment spec with top-level keys replaced."""
    spec = copy.deepcopy(BASE_EXPERIMENT)
    spec.update(copy.deepcopy(overrides))
    return spec


def render_experiment(spec: dict[str, Any], *, region: str = "us-east-1", now: datetime = FIXED_NOW, **kw: Any) -> Rendering:
    config = {"aws:region": region, "gpulease:experiment": spec}
    return render(config, stack=kw.pop("stack", "test"), now=now, **kw)


@pytest.fixture
def now() -> datetime:
    return FIXED_NOW
