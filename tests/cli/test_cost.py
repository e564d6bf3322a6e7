"""``gpulease cost``: a stack's expected and worst-case cost from what its program registers, with each price's date,
stale-price warnings and catalog overrides for the command only."""

from __future__ import annotations

import json

import pytest

from gpulease.cli import main
from gpulease.core import clock
from gpulease.core.catalog import load_catalog
from gpulease.review.engine import estimate as stack_cost
from tests.support.clock import FIXED_NOW


def test_cost_command_json_and_table(capsys, lora_stack):
    assert main(["cost", "aws-lora-7b", "--json"]) == 0
    [result] = json.loads(capsys.readouterr().out)["data"]["stacks"]
    assert result["stack"] == "aws-lora-7b" and result["error"] is None
    assert result["worstCaseUsd"] == pytest.approx(stack_cost(lora_stack).worst_case_usd)
    assert {line["resource"] for line in result["lines"]} >= {"llama7b-lora-instance", "llama7b-lora-data"}
    assert main(["cost", "aws-lora-7b"]) == 0
    out = capsys.readouterr().out
    assert "worst case" in out and "g6.xlarge spot" in out and "after destroy" in out
    assert main(["cost", "no-such-stack"]) == 2
    assert "known stacks" in capsys.readouterr().err


def test_a_catalog_override_changes_the_cost(tmp_path, capsys, catalog):
    override = tmp_path / "prices.yaml"
    override.write_text("instances:\n  - {cloud: aws, type: g6.xlarge, prices: {us-east-1: 0.5}}\n")
    assert main(["cost", "aws-lora-7b", "--json", "--catalog", str(override)]) == 0
    [result] = json.loads(capsys.readouterr().out)["data"]["stacks"]
    instance_line = next(line for line in result["lines"] if line["item"].startswith("g6.xlarge"))
    assert instance_line["maxHourlyUsd"] == 0.5
    assert instance_line["hourlyUsd"] == pytest.approx(0.5 * (1 - catalog.get("aws", "g6.xlarge").spot_discount))
    # The override lasted for the command only.
    assert load_catalog().get("aws", "g6.xlarge").prices["us-east-1"] == catalog.get("aws", "g6.xlarge").prices["us-east-1"]


def test_an_override_reaches_instance_resolution_inside_the_program(tmp_path, capsys):
    # g6.xlarge made dear: the stack's {gpuMemoryGb: 24} now resolves to the next cheapest, g6.2xlarge ($0.9776).
    override = tmp_path / "dear.yaml"
    override.write_text("instances:\n  - {cloud: aws, type: g6.xlarge, prices: {us-east-1: 10.0}}\n")
    assert main(["cost", "aws-lora-7b", "--json", "--catalog", str(override)]) == 0
    [result] = json.loads(capsys.readouterr().out)["data"]["stacks"]
    assert any(line["item"].startswith("g6.2xlarge spot") for line in result["lines"])


def test_cost_shows_each_figure_s_date_and_warns_on_stale_prices(capsys, fresh_g6):
    with clock.frozen(FIXED_NOW):
        assert main(["cost", "aws-lora-7b", "--json", "--catalog", str(fresh_g6)]) == 0
    [result] = json.loads(capsys.readouterr().out)["data"]["stacks"]
    instance = next(line for line in result["lines"] if line["item"].startswith("g6.xlarge"))
    assert (instance["hourlyUsd"], instance["priceAsOf"]) == (0.3511, "2026-11-30")  # the volume is in us-east-1a
    stale = {s["price"]: (s["asOf"], s["ageDays"]) for s in result["stalePrices"]}
    assert stale["data disk gp3 200 GB in us-east-1"] == ("2025-06-01", 548)
    assert not any(name.startswith("g6.xlarge") for name in stale)  # refreshed the day before: fresh
    assert result["maxPriceAgeDays"] == 30 and result["priceCatalog"] == f"shipped catalog of 2025-06-01, overrides: {fresh_g6}"
    with clock.frozen(FIXED_NOW):
        assert main(["cost", "aws-lora-7b", "--catalog", str(fresh_g6)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "price date" in out and "2026-11-30" in out
    assert "warning: stale prices up to 548 days old (2025-06-01; " in out
    assert "gpulease catalog refresh" in out
    with clock.frozen(FIXED_NOW):
        assert main(["cost", "aws-lora-7b", "--json", "--max-price-age", "600"]) == 0
    assert json.loads(capsys.readouterr().out)["data"]["stacks"][0]["stalePrices"] == []


@pytest.mark.parametrize("bad", ["-1", "soon", "99999"])
def test_max_price_age_must_be_a_number_of_days(capsys, bad):
    with pytest.raises(SystemExit) as exit_:
        main(["cost", "aws-lora-7b", "--max-price-age", bad])
    assert exit_.value.code == 2 and "--max-price-age" in capsys.readouterr().err

