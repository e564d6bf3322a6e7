"""``gpulease plan`` and ``gpulease cost`` show a stack's phase and each phase's price side by side."""

from __future__ import annotations

import json

import pytest

from gpulease.cli import main
from gpulease.core.catalog import HOURS_PER_MONTH
from gpulease.review.engine import estimate, render_target
from gpulease.review.phases import phase_line, phase_prices
from gpulease.review.stacks import resolve


def _rendering(stack: str):
    [(project_dir, stack_file)] = resolve(stack)
    return render_target(project_dir, stack_file)


@pytest.fixture(scope="module")
def prep_prices():
    rendering = _rendering("aws-prep-7b")
    return rendering, {p.phase: p for p in phase_prices(rendering)}


def test_each_phase_is_priced_from_its_own_rendering(prep_prices, no_catalog_overrides):
    rendering, prices = prep_prices
    assert [p.phase for p in prices.values() if p.current] == ["prep"]
    # prep: the cheapest CPU type with 4 vCPUs and 16 GB; train: the GPU type; parked: no instance.
    assert prices["prep"].instance == "m6a.xlarge"
    assert prices["train"].instance.startswith("g")
    assert prices["parked"].instance == "none"
    # The current phase's price is the stack's own estimate.
    assert prices["prep"].hourly_usd == pytest.approx(estimate(rendering).hourly_usd)
    assert prices["parked"].hourly_usd < prices["prep"].hourly_usd < prices["train"].hourly_usd
    # Parked is storage only: what the retained disk and bucket cost a month.
    assert prices["parked"].monthly_usd == pytest.approx(estimate(rendering).after_destroy_monthly_usd, rel=1e-6)
    assert prices["parked"].monthly_usd == pytest.approx(prices["parked"].hourly_usd * HOURS_PER_MONTH)
    line = phase_line(list(prices.values()))
    assert line.startswith("phase: prep; per hour: prep $")
    assert "(m6a.xlarge)" in line and "storage only" in line


def test_a_stack_without_a_phase_shows_none(no_catalog_overrides):
    assert phase_prices(_rendering("aws-lora-7b")) is None


def test_cost_command_shows_the_phases(capsys, no_catalog_overrides):
    assert main(["cost", "ali-prep-7b", "--json"]) == 0
    [result] = json.loads(capsys.readouterr().out)["data"]["stacks"]
    phases = {p["phase"]: p for p in result["phases"]}
    assert phases["prep"]["current"] and phases["prep"]["instance"].startswith("ecs.")
    assert phases["parked"]["instance"] == "none"
    assert phases["prep"]["hourlyUsd"] == pytest.approx(result["hourlyUsd"])
    assert main(["cost", "ali-prep-7b"]) == 0
    assert "phase: prep; per hour: prep $" in capsys.readouterr().out
