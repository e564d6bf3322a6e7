"""Catalog overrides that would switch the cost guards off are refused, naming the file, the line and the row: a
price below a sane floor or of the wrong type, a date in the future, the same row twice in one file."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.core.catalog import CatalogError, load_catalog
from tests.core.test_catalog import VALID_ROW

REGION_ROW = (
    "  - {cloud: aws, region: us-east-1, blockStorageGbMonth: {gp3: 0.08}, snapshotGbMonth: 0.05,\n"
    "     publicIpv4Hour: 0.005, objectStorageGbMonth: 0.023, egressGb: 0.09, asOf: 2026-01-01, source: aws-storage}\n"
)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "override.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("body", "phrase"), [
    ("instances:\n" + VALID_ROW.replace("us-east-1: 0.5,", "us-east-1: 1e-300,"), "at least 1e-06"),
    ("instances:\n" + VALID_ROW.replace("prices: {us-east-1: 0.5, us-west-2: 0.5}",
                                        "prices: {us-east-1: 0.5}, spotPrices: {us-east-1a: 1e-300}"), "below any instance hour"),
    ("instances:\n" + VALID_ROW.replace("us-east-1: 0.5,", "us-east-1: true,"), "prices.us-east-1"),
    ("instances:\n" + VALID_ROW.replace("us-east-1: 0.5,", "us-east-1: '0.5',"), "prices.us-east-1"),
    ("instances:\n" + VALID_ROW.replace("spotDiscount: 0.5", "spotDiscount: true"), "spotDiscount"),
    ("instances:\n" + VALID_ROW.replace("gpuCount: 1", "gpuCount: true"), "gpuCount"),
    ("instances:\n" + VALID_ROW.replace("asOf: 2026-01-01", "asOf: 9999-12-31"), "9999-12-31 is in the future"),
    ("instances:\n" + VALID_ROW.replace("prices: {us-east-1: 0.5, us-west-2: 0.5}",
                                        "prices: {us-east-1: 0.5}, pricesAsOf: {us-east-1: 9999-12-31}"), "in the future"),
    ("regions:\n" + REGION_ROW.replace("egressGb: 0.09", "egressGb: 1e-300"), "below the floor of a price item"),
    ("regions:\n" + REGION_ROW.replace("egressGb: 0.09", "egressGb: true"), "egressGb"),
    ("regions:\n" + REGION_ROW.replace("asOf: 2026-01-01", "asOf: 9999-12-31"), "in the future"),
])
def test_a_row_that_would_switch_a_guard_off_is_refused_naming_file_line_and_row(tmp_path, body, phrase):
    path = _write(tmp_path, body)
    with pytest.raises(CatalogError) as err:
        load_catalog([path])
    message = str(err.value)
    assert message.startswith(f"{path} line 2: ") and phrase in message, message
    assert "instances[0]" in message or "regions[0]" in message


def test_the_same_row_twice_in_one_file_is_refused_naming_both_lines(tmp_path):
    path = _write(tmp_path, "instances:\n" + VALID_ROW + VALID_ROW.replace("0.5,", "0.7,", 1))
    with pytest.raises(CatalogError) as err:
        load_catalog([path])
    message = str(err.value)
    assert message.startswith(f"{path} line 5: instances[1] (aws g9.xlarge)")
    assert "listed twice in this file (first at line 2)" in message and "accepted: each row once per file" in message


def test_a_row_in_two_files_still_merges(tmp_path):
    first = tmp_path / "a.yaml"
    first.write_text("instances:\n" + VALID_ROW)
    second = tmp_path / "b.yaml"
    second.write_text("instances:\n  - {cloud: aws, type: g9.xlarge, prices: {us-east-1: 0.7}, asOf: 2026-02-01}\n")
    row = load_catalog([first, second]).get("aws", "g9.xlarge")
    assert row.prices["us-east-1"] == 0.7 and row.prices["us-west-2"] == 0.5


def test_a_zero_price_item_and_a_cheap_hour_are_accepted(tmp_path):
    path = _write(tmp_path, "instances:\n" + VALID_ROW.replace("us-east-1: 0.5,", "us-east-1: 0.00001,")
                  + "regions:\n" + REGION_ROW.replace("egressGb: 0.09", "egressGb: 0"))
    catalog = load_catalog([path])
    assert catalog.get("aws", "g9.xlarge").prices["us-east-1"] == 0.00001
    assert catalog.region_prices("aws", "us-east-1").egress_gb == 0
