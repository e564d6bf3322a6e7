"""The override file a refresh writes: never a NaN, a negative, a zero or an empty price, whatever the APIs answer;
only rows the loader can use; written only once the loader accepts it."""

from __future__ import annotations

import math
from datetime import date
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpulease.catalog_refresh import changes, writer
from gpulease.catalog_refresh.fetched import Fetched, NewType, RejectedPriceError, accept
from gpulease.core.catalog import load_catalog

TODAY = date(2026, 11, 30)
FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("value", ["NaN", "nan", float("nan"), "Infinity", float("inf"), "-1", -0.01, 0, "0.0000000000",
                                   "", "  ", None, True, "1,5", "USD 1", [], {}])
def test_accept_refuses_what_is_not_a_positive_finite_price(value):
    with pytest.raises(RejectedPriceError):
        accept(value, "test")


@pytest.mark.parametrize(("value", "expected"), [("1.0060000000", 1.006), (0.00001, 0.00001), ("2e-3", 0.002), (3, 3.0)])
def test_accept_keeps_positive_finite_prices(value, expected):
    assert accept(value, "test") == expected


@pytest.mark.parametrize(
    "doc",
    [
        {"instances": [{"cloud": "aws", "type": "g5.xlarge", "prices": {"us-east-1": float("nan")}}]},
        {"instances": [{"cloud": "aws", "type": "g5.xlarge", "prices": {"us-east-1": -1.0}}]},
        {"instances": [{"cloud": "aws", "type": "g5.xlarge", "prices": {"us-east-1": 0.0}}]},
        {"instances": [{"cloud": "aws", "type": "g5.xlarge", "prices": {}}]},
        {"instances": [{"cloud": "aws", "type": "g5.xlarge", "spotPrices": {"us-east-1a": ""}}]},
        {"instances": [{"cloud": "aws", "type": "g5.xlarge", "spotPrices": {"us-east-1a": None}}]},
        {"regions": [{"cloud": "aws", "region": "us-east-1", "snapshotGbMonth": float("inf")}]},
        {"regions": [{"cloud": "aws", "region": "us-east-1", "blockStorageGbMonth": {}}]},
    ],
)
def test_the_last_check_refuses_every_unsafe_price(doc):
    with pytest.raises(writer.UnsafeDocumentError):
        writer.check(doc)


def test_only_usable_rows_are_written():
    catalog = load_catalog([])
    found = Fetched("aws", TODAY)
    found.on_demand[("g5.xlarge", "us-east-1")] = 1.1
    found.spot[("g5.xlarge", "us-east-1a")] = 0.4
    found.spot[("g5.xlarge", "ap-south-1a")] = 0.3  # no on-demand price in ap-south-1, in the catalog or here
    found.spot[("g9.xlarge", "us-east-1a")] = 0.3  # a type nobody knows
    found.new_types["g6.64xlarge"] = NewType("aws", "g6.64xlarge", 8, 256, 1024, "g6.xlarge")  # no price: dropped
    found.region_items[("us-east-1", "snapshotGbMonth")] = 0.04
    found.region_items[("ap-south-1", "snapshotGbMonth")] = 0.05  # a region row would be incomplete: dropped
    doc = writer.document(catalog, [found], TODAY)
    assert doc["instances"] == [{"cloud": "aws", "type": "g5.xlarge", "prices": {"us-east-1": 1.1},
                                 "spotPrices": {"us-east-1a": 0.4}, "asOf": TODAY}]
    assert doc["regions"] == [{"cloud": "aws", "region": "us-east-1", "snapshotGbMonth": 0.04, "asOf": TODAY}]
    assert set(doc["sources"]) == {"aws-price-list-api"}


def test_a_file_the_loader_refuses_never_replaces_the_old_one(tmp_path):
    target = tmp_path / "prices.yaml"
    target.write_text("# previous\n")
    with pytest.raises(Exception, match="spotPrices"):
        writer.write(target, "instances:\n  - {cloud: aws, type: g5.xlarge, spotPrices: {us-east-1a: .nan}}\n")
    assert target.read_text() == "# previous\n"
    assert [p.name for p in tmp_path.iterdir()] == ["prices.yaml"]  # no temporary file left behind


api_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "", " ", "0", "0.0000000000", "-1.5", "1e309", "1e-320"]),
    st.decimals(allow_nan=True, allow_infinity=True).map(str),
    st.none(),
)
zones = st.sampled_from(["us-east-1a", "us-east-1b", "us-west-2c", "eu-west-1a", "ap-south-1a"])
regions = st.sampled_from(["us-east-1", "us-west-2", "eu-west-1", "ap-south-1"])
types = st.sampled_from(["g5.xlarge", "g6.xlarge", "g4dn.metal", "p5.48xlarge"])
items = st.sampled_from(["blockStorageGbMonth.gp3", "provisionedIopsMonth.io2", "snapshotGbMonth", "publicIpv4Hour",
                         "objectStorageGbMonth"])


@FAST
@given(st.lists(st.tuples(types, regions, api_values), max_size=8), st.lists(st.tuples(types, zones, api_values), max_size=8),
       st.lists(st.tuples(regions, items, api_values), max_size=8))
def test_whatever_the_apis_answer_the_file_holds_only_positive_finite_prices(tmp_path, on_demand, spot, region_items):
    found = Fetched("aws", TODAY)
    for name, region, value in on_demand:
        found.put(found.on_demand, (name, region), value, "on-demand")
    for name, zone, value in spot:
        found.put(found.spot, (name, zone), value, "spot")
    for region, item, value in region_items:
        found.put(found.region_items, (region, item), value, "item")
    catalog = load_catalog([])
    doc = writer.document(catalog, [found], TODAY)
    target = tmp_path / "prices.yaml"
    writer.write(target, writer.render(doc, ["property test"]))
    written = yaml.safe_load(target.read_text())
    prices = [v for row in written.get("instances", []) for m in ("prices", "spotPrices") for v in (row.get(m) or {}).values()]
    prices += [v for row in written.get("regions", []) for k, v in row.items() if k not in ("cloud", "region", "asOf")
               for v in (v.values() if isinstance(v, dict) else [v])]
    assert all(isinstance(p, float | int) and not isinstance(p, bool) and math.isfinite(p) and p > 0 for p in prices)
    merged = load_catalog([target])  # and the loader takes it
    for (name, region), value in found.on_demand.items():
        assert merged.get("aws", name).prices[region] == value
    report = changes.compare(catalog, [found])
    assert all(c.new > 0 and math.isfinite(c.new) for c in report.changes)


def test_rendered_file_has_no_yaml_aliases_and_dated_values(tmp_path: Path):
    found = Fetched("aws", TODAY)
    found.on_demand[("g5.xlarge", "us-east-1")] = 1.1
    found.on_demand[("g6.xlarge", "us-east-1")] = 0.8
    text = writer.render(writer.document(load_catalog([]), [found], TODAY), ["header"])
    assert "&" not in text and "*" not in text and text.count("asOf: 2026-11-30") == 2
    assert text.startswith("# header\n")


def test_a_type_and_a_region_known_only_from_an_override_get_whole_rows(tmp_path):
    """The refreshed file stands alone over the shipped catalog, even for what another override added."""
    added = tmp_path / "team.yaml"
    added.write_text(
        "instances:\n"
        "  - {cloud: aws, type: g9.xlarge, gpuModel: X1, gpuCount: 1, gpuMemoryGb: 32, memoryBandwidthGbps: 1000,\n"
        "     interconnect: pcie, vcpu: 4, ramGb: 16, prices: {us-east-1: 0.5, ap-south-1: 0.6}, spotDiscount: 0.5,\n"
        "     asOf: 2026-01-01, source: 'https://example.com/prices'}\n"
        "regions:\n"
        "  - {cloud: aws, region: ap-south-1, blockStorageGbMonth: {gp3: 0.09, gp2: 0.11}, snapshotGbMonth: 0.05,\n"
        "     publicIpv4Hour: 0.005, objectStorageGbMonth: 0.025, egressGb: 0.1093, asOf: 2026-01-01, source: team}\n"
        "sources:\n  team: {url: 'https://example.com/team'}\n"
    )
    in_use = load_catalog([added])
    found = Fetched("aws", TODAY)
    found.on_demand[("g9.xlarge", "us-east-1")] = 0.45
    found.spot[("g9.xlarge", "ap-south-1a")] = 0.2  # ap-south-1 is priced only by the other override: not written
    found.region_items[("ap-south-1", "blockStorageGbMonth.gp3")] = 0.0912
    target = tmp_path / "refreshed.yaml"
    writer.write(target, writer.render(writer.document(in_use, [found], TODAY), ["test"]))
    alone = load_catalog([target])
    g9 = alone.get("aws", "g9.xlarge")
    assert (g9.gpu_model, g9.prices, g9.spot_prices, g9.source) == ("X1", {"us-east-1": 0.45}, {}, "aws-price-list-api")
    mumbai = alone.region_prices("aws", "ap-south-1")
    assert (mumbai.disk_gb_month("gp3"), mumbai.item_date("blockStorageGbMonth.gp3")) == (0.0912, TODAY)
    assert (mumbai.disk_gb_month("gp2"), mumbai.item_date("blockStorageGbMonth.gp2")) == (0.11, date(2026, 1, 1))
    assert (mumbai.egress_gb, mumbai.item_date("egressGb")) == (0.1093, date(2026, 1, 1))
    both = load_catalog([added, target])
    assert both.get("aws", "g9.xlarge").prices == {"us-east-1": 0.45, "ap-south-1": 0.6}
    assert both.get("aws", "g9.xlarge").price_date("ap-south-1") == date(2026, 1, 1)
    assert "aws g9.xlarge spot in ap-south-1a: no on-demand price in its region to cap it" in found.skipped
