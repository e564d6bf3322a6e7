"""``gpulease size``: the instance types that hold a workload, cheapest first, with current spot prices and their
dates, and the refusals of bad input."""

from __future__ import annotations

import json

import pytest

from gpulease.cli import main
from gpulease.core import clock
from tests.support.clock import FIXED_NOW


def test_size_command_json_lists_sorted_fitting_offers(capsys):
    code = main(["size", "--params", "7B", "--method", "lora", "--batch", "4", "--grad-checkpointing", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    prices = [o["onDemandUsdPerHour"] for o in out["offers"]]
    assert prices == sorted(prices)
    assert out["offers"][0]["instanceType"] == "g6.xlarge"
    assert all(o["neededPerGpuGb"] <= o["gpuMemoryGb"] * 0.9 for o in out["offers"])
    assert out["estimate"]["totalGb"] == pytest.approx(out["offers"][0]["neededPerGpuGb"], abs=0.01)
    assert {"memoryBandwidthGbps", "interconnect", "spotEstimateUsdPerHour"} <= set(out["offers"][0])


def test_size_command_table_and_bad_input(capsys):
    assert main(["size", "--params", "70B", "--method", "full", "--gpus", "1"]) == 1
    assert "No aws instance type in us-east-1 holds this" in capsys.readouterr().out
    assert main(["size", "--params", "7B", "--method", "full", "--batch", "8", "--grad-checkpointing"]) == 0
    out = capsys.readouterr().out
    assert "g6e.12xlarge" in out and "over PCIe" in out
    assert main(["size", "--params", "seven"]) == 2
    assert "--params" in capsys.readouterr().err
    assert main(["size", "--params", "7B", "--region", "mars-1"]) == 2
    assert "'mars-1' is not an AWS region" in capsys.readouterr().err


def test_size_shows_current_spot_prices_dates_and_stale_warnings(capsys, fresh_g6):
    args = ["size", "--params", "3B", "--gpus", "1", "--limit", "0", "--catalog", str(fresh_g6)]
    with clock.frozen(FIXED_NOW):
        assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    g6 = next(o for o in out["offers"] if o["instanceType"] == "g6.xlarge")
    assert (g6["spotEstimateUsdPerHour"], g6["spotBasis"], g6["spotZone"], g6["spotAsOf"]) == (
        0.2977, "current", "us-east-1b", "2026-11-30")
    assert g6["onDemandUsdPerHour"] == 0.8 and g6["priceAsOf"] == "2026-11-30"
    g5 = next(o for o in out["offers"] if o["instanceType"] == "g5.xlarge")
    assert (g5["spotBasis"], g5["spotZone"], g5["priceAsOf"]) == ("estimate", None, "2025-06-01")
    stale = {s["price"] for s in out["stalePrices"]}
    assert "g5.xlarge on-demand in us-east-1" in stale and "g6.xlarge on-demand in us-east-1" not in stale
    with clock.frozen(FIXED_NOW):
        assert main([*args, "--limit", "3"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "$0.298/h us-east-1b" in text and "(spot" in text and "$0.184/h est." in text
    # Once, briefly: how old, and how to clear it.
    assert "warning: stale prices up to 548 days old (2025-06-01; " in text
    assert " older than 30 days); `gpulease catalog refresh` writes fresh ones to your catalog folder" in text
    assert text.count("stale") == 1



def test_a_mistyped_region_is_named_with_the_nearest_one(capsys):
    assert main(["size", "--params", "7B", "--region", "us-west2"]) == 2
    assert capsys.readouterr().err == (
        "gpulease: --region: 'us-west2' is not an AWS region (did you mean us-west-2?); accepted: an AWS region, e.g. "
        "us-west-2 (the list is in components/aws/spec.py)\n")
    assert main(["size", "--params", "7B", "--region", "cn-hangzhou"]) == 2
    assert "accepted: --cloud alicloud to use it" in capsys.readouterr().err
    # A real region the catalog has no prices for is named as such.
    assert main(["size", "--params", "7B", "--region", "ap-south-1"]) == 2
    assert "the catalog has no aws prices in ap-south-1" in capsys.readouterr().err
