"""`gpulease catalog refresh --cloud alicloud` against the loopback ECS stub (ACS3 signatures verified): DescribePrice,
DescribeSpotPriceHistory and DescribeInstanceTypes answered as the API reference shapes them
(tests/support/alicloud_price.py), with paging, throttling and the prices that must never be written."""

from __future__ import annotations

import json
import math

import pytest
import yaml

from gpulease.catalog_refresh.alicloud import AlicloudRefresh
from gpulease.catalog_refresh.fetched import Fetched
from gpulease.catalog_refresh.run import Plan
from gpulease.cli import catalog as catalog_command
from gpulease.cli import main
from gpulease.core import clock
from gpulease.core.catalog import OVERRIDES_ENV, load_catalog
from tests.support.alicloud_inventory import offline_credentials
from tests.support.alicloud_price import PriceBook, install_prices, instance_type
from tests.support.clock import REFRESH_EVE

NOW = REFRESH_EVE
REGION = "cn-hangzhou"


def book() -> PriceBook:
    return PriceBook(
        instances={
            (REGION, "ecs.gn7i-c8g1.2xlarge"): 1.85,
            (REGION, "ecs.gn7i-c16g1.4xlarge"): 2.3,
            (REGION, "ecs.gn7i-2x.8xlarge"): 4.1,
            (REGION, "ecs.gn6i-c4g1.xlarge"): float("nan"),
            (REGION, "ecs.gn6i-c8g1.2xlarge"): -0.5,
            (REGION, "ecs.gn6i-c16g1.4xlarge"): 0,
            (REGION, "ecs.gn6i-c24g1.12xlarge"): None,
        },
        disks={(REGION, "cloud_essd"): 0.000192, (REGION, "cloud_essd_pl2"): 0.000384, (REGION, "cloud_efficiency"): 0.00007},
        spot={(REGION, "ecs.gn7i-c8g1.2xlarge"): [
            ("cn-hangzhou-h", "2026-11-30T06:00:00Z", 0.62), ("cn-hangzhou-i", "2026-11-30T06:00:00Z", 0.70),
            ("cn-hangzhou-h", "2026-11-30T07:00:00Z", 0.61), ("cn-hangzhou-i", "2026-11-30T07:00:00Z", 0.72),
            ("cn-hangzhou-j", "2026-11-30T07:00:00Z", 0.0), ("cn-hangzhou-h", "2026-11-30T08:00:00Z", 0.64),
            ("cn-beijing-k", "2026-11-30T08:00:00Z", 0.33), ("cn-hangzhou-i", "2026-11-30T05:00:00Z", 0.99),
        ], (REGION, "ecs.gn7i-c16g1.4xlarge"): [("cn-hangzhou-i", "2026-11-30T08:00:00Z", 0.95)]},
        types=[
            instance_type("ecs.gn7i-c8g1.2xlarge", "ecs.gn7i", 1, 8, 30),
            instance_type("ecs.gn7i-2x.8xlarge", "ecs.gn7i", 2, 32, 128),
            instance_type("ecs.gn6i-c4g1.xlarge", "ecs.gn6i", 1, 4, 15, "NVIDIA T4"),
            {**instance_type("ecs.gn7i-c8g1.9xlarge", "ecs.gn7i", 1, 36, 128), "GPUAmount": None},
        ],
    )


@pytest.fixture
def prices(ali):
    the_book = book()
    install_prices(ali.stub, the_book)
    return the_book


@pytest.fixture(autouse=True)
def _no_env_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(OVERRIDES_ENV, raising=False)


def _refresh(clients) -> Fetched:
    job = AlicloudRefresh(clients, load_catalog([]), NOW)
    found = Fetched("alicloud", NOW.date())
    job.step(found, "types", lambda: job.discover(REGION, found))
    for name in sorted(set(job.known) | set(found.new_types)):
        job.step(found, f"{name} on-demand", lambda n=name: job.instance(REGION, n, found))
    job.step(found, "disks", lambda: job.disks(REGION, found))
    for name in sorted(n for (n, _) in found.on_demand):
        job.step(found, f"{name} spot", lambda n=name: job.spot(REGION, n, found))
    return found


def test_prices_are_parsed_from_the_answers(ali, prices):
    found = _refresh(ali.clients())
    # The instance alone (its DetailInfo), not the instance plus its system disk.
    assert found.on_demand == {("ecs.gn7i-c8g1.2xlarge", REGION): 1.85, ("ecs.gn7i-c16g1.4xlarge", REGION): 2.3,
                               ("ecs.gn7i-2x.8xlarge", REGION): 4.1}
    assert found.spot == {("ecs.gn7i-c8g1.2xlarge", "cn-hangzhou-h"): 0.64, ("ecs.gn7i-c8g1.2xlarge", "cn-hangzhou-i"): 0.72,
                          ("ecs.gn7i-c16g1.4xlarge", "cn-hangzhou-i"): 0.95}
    # Per GB-hour x 730 hours: the catalog's GB-month.
    assert found.region_items == {(REGION, "blockStorageGbMonth.cloud_essd"): pytest.approx(0.14016),
                                  (REGION, "blockStorageGbMonth.cloud_essd_pl2"): pytest.approx(0.28032),
                                  (REGION, "blockStorageGbMonth.cloud_efficiency"): pytest.approx(0.0511)}
    new = found.new_types["ecs.gn7i-2x.8xlarge"]
    assert (new.gpu_count, new.vcpu, new.ram_gb, new.family_of) == (2, 32, 128.0, "ecs.gn7i-c8g1.2xlarge")
    assert found.failures == []


def test_prices_that_must_never_be_written_are_skipped(ali, prices):
    found = _refresh(ali.clients())
    reasons = "\n".join(found.skipped)
    assert "alicloud ecs.gn6i-c4g1.xlarge on-demand in cn-hangzhou: nan is not a finite number" in reasons
    assert "alicloud ecs.gn6i-c8g1.2xlarge on-demand in cn-hangzhou: -0.5 is not a positive price" in reasons
    assert "alicloud ecs.gn6i-c16g1.4xlarge on-demand in cn-hangzhou: 0 is not a positive price" in reasons
    assert "alicloud ecs.gn6i-c24g1.12xlarge on-demand in cn-hangzhou: no price given (None)" in reasons
    assert "alicloud ecs.gn7i-c8g1.2xlarge spot in cn-hangzhou-j: 0.0 is not a positive price" in reasons
    assert "alicloud ecs.gn7i-c8g1.9xlarge: DescribeInstanceTypes lacks its GPU count" in reasons
    assert "alicloud ecs.gn7e-c16g1.4xlarge on-demand in cn-hangzhou: not offered (InvalidInstanceType.ValueNotSupported" in reasons
    assert "alicloud cloud_ssd GB-month in cn-hangzhou: not offered" in reasons
    assert not any(name.startswith("ecs.gn6i") for name, _ in found.on_demand)


def test_requests_and_paging(ali, prices):
    _refresh(ali.clients())
    calls = [params for action, params in ali.stub.calls if action == "DescribeSpotPriceHistory"
             and params.get("InstanceType") == "ecs.gn7i-c8g1.2xlarge"]
    # 8 entries, 3 a page: offsets 0, 3, 6, then an empty page at 8 ends the listing.
    assert [c.get("Offset") for c in calls] == ["0", "3", "6", "8"]
    assert all((c["RegionId"], c["NetworkType"], c["OSType"]) == (REGION, "vpc", "linux") for c in calls)
    types = [params for action, params in ali.stub.calls if action == "DescribeInstanceTypes"]
    assert [t.get("NextToken") for t in types] == [None, "2"]  # two pages of two
    assert {t["InstanceTypeFamilies.1"] for t in types} == {"ecs.gn6e"}  # families sorted, ten a call
    price = next(p for a, p in ali.stub.calls if a == "DescribePrice" and p.get("InstanceType") == "ecs.gn7i-c8g1.2xlarge")
    assert (price["ResourceType"], price["PriceUnit"], price["RegionId"]) == ("instance", "Hour", REGION)
    disk = next(p for a, p in ali.stub.calls if a == "DescribePrice" and p.get("DataDisk.1.Category") == "cloud_essd"
                and p.get("DataDisk.1.PerformanceLevel") == "PL2")
    assert (disk["ResourceType"], disk["DataDisk.1.Size"], disk["PriceUnit"]) == ("disk", "100", "Hour")


def test_throttling_is_retried_by_the_sdk_then_reported(ali, prices):
    ali.stub.faults.add("DescribePrice", 2, "Throttling.User", 400)
    ali.stub.faults.add("DescribeSpotPriceHistory", 1, "ServiceUnavailable", 503)
    found = _refresh(ali.clients(max_attempts=4))
    assert ali.stub.faults.served() == {"DescribePrice": 2, "DescribeSpotPriceHistory": 1}
    assert found.failures == [] and found.on_demand[("ecs.gn7i-c8g1.2xlarge", REGION)] == 1.85

    ali.reset()
    install_prices(ali.stub, book())
    ali.stub.faults.add("DescribePrice", 1000, "Throttling.User", 400)
    failed = _refresh(ali.clients(max_attempts=2))
    assert failed.on_demand == {} and failed.failures
    assert all("Throttling.User" in f for f in failed.failures)
    assert not any("not offered" in s for s in failed.skipped)  # throttled is not "not sold here"


def test_a_china_site_account_is_refused_not_converted(ali, prices):
    prices.currency = "CNY"
    found = _refresh(ali.clients())
    assert found.on_demand == {} and found.spot == {} and found.region_items == {}
    assert "alicloud ecs.gn7i-c8g1.2xlarge on-demand in cn-hangzhou: priced in CNY (a China-site account); " \
           "the catalog is in USD" in found.skipped


@pytest.fixture
def refresh_cli(ali, prices, monkeypatch):
    monkeypatch.setattr(catalog_command, "make_plan",
                        lambda args, clouds, regions: Plan(clouds, regions, alicloud_clients=ali.clients))
    with clock.frozen(NOW):
        yield ali


def test_refresh_writes_the_override_and_reports_the_changes(refresh_cli, tmp_path, capsys):
    out = tmp_path / "ali.yaml"
    assert main(["catalog", "refresh", "--cloud", "alicloud", "--regions", REGION, "--output", str(out)]) == 0
    doc = yaml.safe_load(out.read_text())
    values = [v for row in doc["instances"] for m in ("prices", "spotPrices") for v in (row.get(m) or {}).values()]
    values += [v for row in doc["regions"] for v in row["blockStorageGbMonth"].values()]
    assert values and all(isinstance(v, float) and math.isfinite(v) and v > 0 for v in values)
    refreshed = load_catalog([out])
    a10 = refreshed.get("alicloud", "ecs.gn7i-c8g1.2xlarge")
    assert (a10.prices[REGION], a10.prices["ap-southeast-1"]) == (1.85, 2.25)
    assert (a10.price_date(REGION).isoformat(), a10.price_date("ap-southeast-1").isoformat()) == ("2026-11-30", "2025-06-01")
    assert a10.spot_zone_prices(REGION) == {"cn-hangzhou-h": 0.64, "cn-hangzhou-i": 0.72}
    new = refreshed.get("alicloud", "ecs.gn7i-2x.8xlarge")
    assert (new.gpu_model, new.gpu_count, new.interconnect, new.ram_gb, new.source) == (
        "A10", 2, "pcie", 128, "alicloud-describe-price")
    hz = refreshed.region_prices("alicloud", REGION)
    assert hz.disk_gb_month("cloud_essd") == pytest.approx(0.14016) and hz.item_date("snapshotGbMonth").isoformat() == "2025-06-01"
    text = " ".join(capsys.readouterr().out.split())
    assert "alicloud │ on-demand │ ecs.gn7i-c8g1.2xlarge │ cn-hangzhou │ 1.93 │ 1.85 │ -4.1%" in text
    assert "alicloud │ spot, cheapest of 2 zone(s) │ ecs.gn7i-c8g1.2xlarge │ cn-hangzhou │ new │ 0.64 │" in text
    assert "new instance types: alicloud ecs.gn7i-2x.8xlarge" in text

    # The next refresh compares with this file: a spot move is old -> new per type and region.
    book_ = book()
    book_.spot[(REGION, "ecs.gn7i-c8g1.2xlarge")].append(("cn-hangzhou-h", "2026-11-30T09:00:00Z", 0.60))
    install_prices(refresh_cli.stub, book_)
    again = tmp_path / "ali-2.yaml"
    assert main(["catalog", "refresh", "--cloud", "alicloud", "--regions", REGION, "--output", str(again),
                 "--catalog", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    moved = [c for c in report["changes"] if c["kind"] == "spot"]
    assert moved == [{"cloud": "alicloud", "kind": "spot", "name": "ecs.gn7i-c8g1.2xlarge", "where": "cn-hangzhou-h",
                      "old": 0.64, "new": 0.6, "percent": -6.25}]
    assert report["unchanged"] > 5 and not any(c["kind"] == "on-demand" for c in report["changes"])


def test_refresh_exits_1_and_keeps_the_old_file_when_calls_fail(refresh_cli, tmp_path, capsys):
    refresh_cli.stub.faults.add("DescribeSpotPriceHistory", 1000, "InternalError", 500)
    out = tmp_path / "ali.yaml"
    assert main(["catalog", "refresh", "--cloud", "alicloud", "--regions", REGION, "--output", str(out), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["output"] is None and not out.exists()
    assert report["failures"] and all("InternalError" in f for f in report["failures"])


def test_missing_credentials_are_exit_2(monkeypatch, tmp_path, capsys):
    offline_credentials(monkeypatch, keys=False)
    assert main(["catalog", "refresh", "--cloud", "alicloud", "--output", str(tmp_path / "p.yaml")]) == 2
    assert "Alibaba Cloud credentials" in capsys.readouterr().err
    assert not (tmp_path / "p.yaml").exists()


def test_default_output_is_dated_and_progress_goes_to_stderr(refresh_cli, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPULEASE_CATALOG_DIR", str(tmp_path / "catalog"))
    assert main(["catalog", "refresh", "--cloud", "alicloud", "--regions", REGION]) == 0
    assert (tmp_path / "catalog" / "gpulease-prices-2026-11-30.yaml").is_file()  # the user's catalog folder
    captured = capsys.readouterr()
    assert "alicloud" in captured.err and "done" in captured.err  # the progress bar's last state
    assert "gpulease-prices-2026-11-30.yaml: in your catalog folder" in " ".join(captured.out.split())
    assert "53/53" not in captured.out
    assert "53/53" in captured.err  # 2 steps for each of the 26 types (25 known, 1 new) and the disks
