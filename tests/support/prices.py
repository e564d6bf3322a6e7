"""Price fixtures (a pytest plugin): no catalog override from the environment, the shipped catalog, a refreshed
price file for g6.xlarge, and the rendering of the aws-lora-7b example stack the cost tests price."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.core.catalog import OVERRIDES_ENV, Catalog, load_catalog
from gpulease.review.render import Rendering, render_stack_file
from tests.support.clock import FIXED_NOW
from tests.support.paths import STACKS_DIR

# What a refresh on FIXED_NOW's eve would write for g6.xlarge (the aws-lora-7b stack's type) in us-east-1: a new
# on-demand price and the current spot price of three zones; the stack's data volume is in us-east-1a.
FRESH_G6 = (
    "instances:\n"
    "  - cloud: aws\n"
    "    type: g6.xlarge\n"
    "    prices: {us-east-1: 0.8}\n"
    "    spotPrices: {us-east-1a: 0.3511, us-east-1b: 0.2977, us-east-1c: 0.4102}\n"
    "    asOf: 2026-11-30\n"
)


@pytest.fixture
def no_catalog_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests price with the shipped catalog unless they say otherwise, whatever the shell exported."""
    monkeypatch.delenv(OVERRIDES_ENV, raising=False)


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog([])


@pytest.fixture(scope="module")
def lora_stack() -> Rendering:
    r = render_stack_file(STACKS_DIR / "Pulumi.aws-lora-7b.yaml", now=FIXED_NOW)
    assert r.error is None, r.error
    return r


@pytest.fixture
def fresh_g6(tmp_path: Path) -> Path:
    path = tmp_path / "fresh.yaml"
    path.write_text(FRESH_G6)
    return path
