"""Dated prices in the catalog format: a date per price, spot prices per zone, and overrides that re-date only what
they change. The override format without these fields keeps working (tests/core/test_catalog.py)."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pytest

from gpulease.core.catalog import CatalogError, load_catalog
from gpulease.core.catalog.freshness import describe_catalog, shipped_as_of
from gpulease.core.catalog.models import UNDATED

SHIPPED = date(2025, 6, 1)
FRESH = date(2026, 11, 30)


def _write(tmp_path: Path, text: str, name: str = "override.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_an_override_re_dates_only_the_prices_it_gives(tmp_path):
    path = _write(tmp_path, "instances:\n  - {cloud: aws, type: g5.xlarge, prices: {us-east-1: 1.1}, asOf: 2026-11-30}\n")
    g5 = load_catalog([path]).get("aws", "g5.xlarge")
    assert (g5.prices["us-east-1"], g5.price_date("us-east-1")) == (1.1, FRESH)
    # The region the override did not refresh keeps its shipped price and its shipped date.
    assert (g5.prices["us-west-2"], g5.price_date("us-west-2")) == (1.006, SHIPPED)
    assert g5.as_of == FRESH and g5.prices_as_of == {"us-west-2": SHIPPED, "eu-west-1": SHIPPED}


def test_the_catalog_date_is_the_oldest_price_not_the_newest_row(tmp_path):
    path = _write(tmp_path, "instances:\n  - {cloud: aws, type: g5.xlarge, prices: {us-east-1: 1.1}, asOf: 2026-11-30}\n")
    assert load_catalog([path]).as_of == "2025-06-01"
    assert shipped_as_of() == "2025-06-01"


def test_spot_prices_per_zone_with_their_own_dates(tmp_path):
    path = _write(
        tmp_path,
        "instances:\n"
        "  - cloud: aws\n"
        "    type: g5.xlarge\n"
        "    spotPrices: {us-east-1a: 0.4312, us-east-1b: 0.3977, us-west-2c: 0.41}\n"
        "    spotPricesAsOf: {us-east-1a: 2026-11-29, us-east-1b: 2026-11-30, us-west-2c: 2026-11-30}\n",
    )
    g5 = load_catalog([path]).get("aws", "g5.xlarge")
    assert g5.spot_zone_prices("us-east-1") == {"us-east-1a": 0.4312, "us-east-1b": 0.3977}
    assert g5.spot_zone_prices("us-west-2") == {"us-west-2c": 0.41}
    assert g5.spot_price_date("us-east-1a") == date(2026, 11, 29) and g5.spot_price_date("us-east-1b") == FRESH
    assert g5.price_date("us-east-1") == SHIPPED  # the on-demand price was not given: it keeps its date


def test_spot_prices_merge_zone_by_zone_across_files(tmp_path):
    first = _write(tmp_path, "instances:\n  - {cloud: aws, type: g5.xlarge, spotPrices: {us-east-1a: 0.43, us-east-1b: 0.40},"
                             " asOf: 2026-11-01}\n", "first.yaml")
    second = _write(tmp_path, "instances:\n  - {cloud: aws, type: g5.xlarge, spotPrices: {us-east-1b: 0.38},"
                              " asOf: 2026-11-30}\n", "second.yaml")
    g5 = load_catalog([first, second]).get("aws", "g5.xlarge")
    assert g5.spot_prices == {"us-east-1a": 0.43, "us-east-1b": 0.38}
    assert (g5.spot_price_date("us-east-1a"), g5.spot_price_date("us-east-1b")) == (date(2026, 11, 1), FRESH)
    assert g5.price_date("us-east-1") == SHIPPED


def test_a_price_given_without_a_date_is_undated_not_the_shipped_row_s_date(tmp_path):
    path = _write(tmp_path, "instances:\n  - {cloud: aws, type: g5.xlarge, prices: {us-east-1: 0.9}}\n"
                            "regions:\n  - {cloud: aws, region: us-east-1, blockStorageGbMonth: {gp3: 0.07}}\n")
    catalog = load_catalog([path])
    g5 = catalog.get("aws", "g5.xlarge")
    # The price the user typed has no date: its age is unknown (never the shipped 2025-06-01, which it is not).
    assert (g5.prices["us-east-1"], g5.price_date("us-east-1")) == (0.9, UNDATED)
    assert (g5.price_date("us-west-2"), g5.as_of) == (SHIPPED, SHIPPED)  # the prices it did not give keep theirs
    region = catalog.region_prices("aws", "us-east-1")
    assert (region.item_date("blockStorageGbMonth.gp3"), region.item_date("snapshotGbMonth")) == (UNDATED, SHIPPED)
    assert catalog.undated == [f"{path} line 2: instances[0] (aws g5.xlarge): prices.us-east-1",
                               f"{path} line 4: regions[0] (aws us-east-1): blockStorageGbMonth.gp3"]
    assert catalog.as_of == "undated"


def test_a_later_file_that_dates_the_price_clears_the_undated_row(tmp_path):
    first = _write(tmp_path, "instances:\n  - {cloud: aws, type: g5.xlarge, prices: {us-east-1: 0.9}}\n", "a.yaml")
    second = _write(tmp_path, "instances:\n  - {cloud: aws, type: g5.xlarge, prices: {us-east-1: 0.95},"
                              " asOf: 2026-11-30}\n", "b.yaml")
    catalog = load_catalog([first, second])
    assert (catalog.get("aws", "g5.xlarge").price_date("us-east-1"), catalog.undated) == (FRESH, [])


def test_an_explicit_date_map_wins_over_the_row_date(tmp_path):
    path = _write(tmp_path, "instances:\n  - {cloud: aws, type: g5.xlarge, prices: {us-east-1: 1.1, us-west-2: 1.1},"
                            " pricesAsOf: {us-west-2: 2026-10-01}, asOf: 2026-11-30}\n")
    g5 = load_catalog([path]).get("aws", "g5.xlarge")
    assert (g5.price_date("us-east-1"), g5.price_date("us-west-2"), g5.price_date("eu-west-1")) == (
        FRESH, date(2026, 10, 1), SHIPPED)


def test_region_rows_date_each_price_item(tmp_path):
    path = _write(tmp_path, "regions:\n  - {cloud: aws, region: us-east-1, blockStorageGbMonth: {gp3: 0.07},"
                            " snapshotGbMonth: 0.045, asOf: 2026-11-30}\n")
    us = load_catalog([path]).region_prices("aws", "us-east-1")
    assert (us.disk_gb_month("gp3"), us.item_date("blockStorageGbMonth.gp3")) == (0.07, FRESH)
    assert (us.disk_gb_month("gp2"), us.item_date("blockStorageGbMonth.gp2")) == (0.10, SHIPPED)
    assert us.item_date("snapshotGbMonth") == FRESH and us.item_date("egressGb") == SHIPPED
    assert us.disk_item("gp3") == "blockStorageGbMonth.gp3" and us.disk_item("nope") is None


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ("{cloud: aws, type: g5.xlarge, spotPrices: {us-east-2a: 0.4}}",
         "spotPrices zones us-east-2a are not availability zones of a region in prices"),
        ("{cloud: aws, type: g5.xlarge, spotPrices: {us-east-1-bos-1a: 0.4}}", "us-east-1-bos-1a are not availability zones"),
        ("{cloud: aws, type: g5.xlarge, spotPrices: {us-east-1a: .nan}}", "spotPrices.us-east-1a"),
        ("{cloud: aws, type: g5.xlarge, spotPrices: {us-east-1a: -0.4}}", "greater than 0"),
        ("{cloud: aws, type: g5.xlarge, spotPrices: {us-east-1a: 0}}", "greater than 0"),
        ("{cloud: aws, type: g5.xlarge, spotPrices: {us-east-1a: ''}}", "spotPrices.us-east-1a"),
        ("{cloud: aws, type: g5.xlarge, pricesAsOf: {ap-south-1: 2026-11-30}}", "pricesAsOf dates ap-south-1, which have no price"),
        ("{cloud: aws, type: g5.xlarge, spotPricesAsOf: {us-east-1a: 2026-11-30}}", "spotPricesAsOf dates us-east-1a"),
        ("{cloud: aws, type: g5.xlarge, pricesAsOf: {us-east-1: soon}}", "pricesAsOf.us-east-1"),
        ("{cloud: aws, type: g5.xlarge, pricesAsOf: [us-east-1]}", "pricesAsOf"),
    ],
)
def test_bad_dated_prices_name_the_file_line_and_row(tmp_path, row, expected):
    path = _write(tmp_path, "# refreshed\ninstances:\n  - " + row + "\n")
    with pytest.raises(CatalogError) as err:
        load_catalog([path])
    message = str(err.value)
    assert f"{path} line 3: instances[0] (aws g5.xlarge)" in message
    assert expected in message, message


def test_region_date_map_must_name_a_price_item(tmp_path):
    path = _write(tmp_path, "regions:\n  - {cloud: aws, region: us-east-1, pricesAsOf: {blockStorageGbMonth.zz9: 2026-11-30}}\n")
    with pytest.raises(CatalogError, match=re.escape("pricesAsOf dates blockStorageGbMonth.zz9, which have no price")):
        load_catalog([path])


def test_reports_name_the_shipped_catalog_and_the_overrides(tmp_path):
    path = _write(tmp_path, "instances:\n  - {cloud: aws, type: g5.xlarge, prices: {us-east-1: 1.1}, asOf: 2026-11-30}\n")
    assert describe_catalog(load_catalog([])) == "shipped catalog of 2025-06-01"
    assert describe_catalog(load_catalog([path])) == f"shipped catalog of 2025-06-01, overrides: {path}"
