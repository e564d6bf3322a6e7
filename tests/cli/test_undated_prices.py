"""A catalog override row without ``asOf``: the prices it gives are undated (their age is unknown), never the
shipped catalog's date. ``plan`` names the file and the row in an advisory; every price-age check counts them as
stale, whatever the maximum age; the JSON says ``asOf: null`` and ``ageDays: null`` rather than a date."""

from __future__ import annotations

import json

import pytest

from gpulease.cli.main import main
from gpulease.core import clock
from tests.support.clock import FIXED_NOW

UNDATED_G6 = "instances:\n  - cloud: aws\n    type: g6.xlarge\n    prices: {us-east-1: 0.5}\n"


@pytest.fixture
def undated(tmp_path, monkeypatch):
    path = tmp_path / "mine.yaml"
    path.write_text(UNDATED_G6)
    monkeypatch.setenv("GPULEASE_CATALOG_OVERRIDES", str(path))
    return path


def test_size_counts_an_undated_price_as_stale_whatever_the_maximum_age(undated, capsys):
    args = ["size", "--params", "1B", "--method", "lora", "--cloud", "aws", "--region", "us-east-1", "--limit", "0",
            "--max-price-age", "3650"]
    with clock.frozen(FIXED_NOW):
        assert main([*args, "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert {"price": "g6.xlarge on-demand in us-east-1", "asOf": None, "ageDays": None} in doc["data"]["stalePrices"]
        assert [p for p in doc["data"]["stalePrices"] if p["asOf"] is not None] == []  # the shipped ones are 548 days old
        assert main(args) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "warning: 1 undated price (age unknown: an override row without asOf); `gpulease catalog refresh`" in out
    assert "0001-01-01" not in out


def test_plan_names_the_file_and_row_and_the_freshness_check_counts_them(undated, capsys):
    with clock.frozen(FIXED_NOW):
        assert main(["plan", "aws-lora-7b", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert data["catalogAdvisories"] == [
        f"{undated} line 2: instances[0] (aws g6.xlarge): prices.us-east-1 have no date (the row has no asOf): their "
        "age is unknown, so they count as stale prices; accepted: asOf: YYYY-MM-DD in the row, the day the prices "
        "were read"]
    fresh = next(v for s in data["stacks"] for v in s["violations"] if v["policy"] == "budget-prices-fresh")
    assert ("used prices older than 30 days or undated: undated (age unknown): g6.xlarge spot (est. 60% off $0.500/h) "
            "in us-east-1; 2025-06-01 (") in fresh["message"]
    with clock.frozen(FIXED_NOW):
        assert main(["plan", "aws-lora-7b"]) == 0
    out = capsys.readouterr().out
    assert "prices: oldest used undated (age unknown), from the shipped catalog of 2025-06-01" in " ".join(out.split())
    assert f"advisory (price catalog): {undated} line 2: instances[0] (aws g6.xlarge): prices.us-east-1 have no " \
           "date" in " ".join(out.split())
