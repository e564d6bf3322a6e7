"""`gpulease catalog refresh --cloud aws`: the Price List Query API (GetProducts, served in-process by
tests/support/price_api.py and, for the exact request, by botocore's Stubber) and EC2 spot price history (moto's
HTTP server, and the Stubber for what moto does not model: several entries per zone, paging)."""

from __future__ import annotations

import json
import math
from datetime import datetime

import boto3
import pytest
import yaml
from botocore.retries.standard import ExponentialBackoff
from botocore.stub import Stubber

from gpulease.catalog_refresh import aws as aws_prices
from gpulease.catalog_refresh.fetched import Fetched
from gpulease.catalog_refresh.run import Plan
from gpulease.cli import catalog as catalog_command
from gpulease.cli import main
from gpulease.core.catalog import OVERRIDES_ENV, load_catalog
from tests.support.clock import FIXED_NOW, REFRESH_EVE
from tests.support.inventory import Faults
from tests.support.price_api import PriceList, gpu_instance, region_products

NOW = REFRESH_EVE


@pytest.fixture(autouse=True)
def _no_env_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(OVERRIDES_ENV, raising=False)
    # botocore's own backoff, scaled down so that throttled retries take milliseconds in tests.
    monkeypatch.setitem(ExponentialBackoff._DEFAULT_BACKOFF_CONFIG, "throttling_base_scale", 0.01)


def _clients(server, **kwargs) -> aws_prices.PriceClients:
    return aws_prices.PriceClients(endpoint_url=server.url, session=boto3.Session(), **kwargs)


def _refresh(clients, region: str = "us-east-1") -> Fetched:
    job = aws_prices.AwsRefresh(clients, load_catalog([]), NOW)
    found = Fetched("aws", NOW.date())
    job.step(found, "on-demand", lambda: job.instances(region, found))
    job.step(found, "storage", lambda: job.storage(region, found))
    types = sorted({name for (name, r) in found.on_demand if r == region})
    job.step(found, "spot", lambda: job.spot(region, types, found))
    return found


def test_on_demand_storage_and_address_prices_are_parsed_exactly(aws):
    clients = _clients(aws)
    PriceList(region_products("us-east-1") + region_products("us-west-2")).install(clients.session)
    found = _refresh(clients)
    assert found.on_demand == {
        ("g4dn.xlarge", "us-east-1"): 0.5, ("g5.xlarge", "us-east-1"): 1.006, ("g6.xlarge", "us-east-1"): 0.7832,
        ("g6.2xlarge", "us-east-1"): 0.9776, ("g6.64xlarge", "us-east-1"): 30.0,
    }
    assert found.region_items == {
        ("us-east-1", "blockStorageGbMonth.gp3"): 0.07, ("us-east-1", "blockStorageGbMonth.gp2"): 0.1,
        ("us-east-1", "blockStorageGbMonth.io2"): 0.125, ("us-east-1", "provisionedIopsMonth.gp3"): 0.005,
        ("us-east-1", "provisionedIopsMonth.io2"): 0.065,  # the first tier of a tiered price
        ("us-east-1", "snapshotGbMonth"): 0.05, ("us-east-1", "publicIpv4Hour"): 0.005,
        ("us-east-1", "objectStorageGbMonth"): 0.023,
    }
    new = found.new_types["g6.64xlarge"]
    assert (new.gpu_count, new.vcpu, new.ram_gb, new.family_of) == (8, 256, 1024.0, "g6.xlarge")
    assert found.failures == []


def test_prices_that_must_never_be_written_are_skipped_with_the_reason(aws):
    clients = _clients(aws)
    PriceList(region_products("us-east-1")).install(clients.session)
    found = _refresh(clients)
    reasons = "\n".join(found.skipped)
    for name, why in (("g5.2xlarge", "'NaN' is not a finite number"), ("g5.4xlarge", "is not a positive price"),
                      ("g5.8xlarge", "'-2.4480000000' is not a positive price"), ("g5.12xlarge", "no price given ('')"),
                      ("g5.16xlarge", "'Infinity' is not a finite number"), ("g6.4xlarge", "2 Hrs price(s) found")):
        assert f"aws {name} on-demand in us-east-1: " in reasons and why in reasons, name
        assert (name, "us-east-1") not in found.on_demand
    assert "aws io1 GB-month in us-east-1: no GB-Mo price(s) found" in reasons  # not in the answer: not invented
    # Filtered out by the query itself: Windows, the $0 Capacity Block p5, families the catalog lacks.
    assert ("p5.48xlarge", "us-east-1") not in found.on_demand and "gr6.4xlarge" not in found.new_types


def test_get_products_request_filters_and_paging_exactly(aws):
    """The request botocore sends, checked by the Stubber; two pages joined through NextToken."""
    clients = _clients(aws)
    pricing = clients.client("pricing", "us-east-1")
    filters = [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in {
        "regionCode": "us-east-1", "instanceFamily": "GPU instance", "operatingSystem": "Linux", "tenancy": "Shared",
        "preInstalledSw": "NA", "capacitystatus": "Used", "licenseModel": "No License required",
        "marketoption": "OnDemand"}.items()]
    first = {"ServiceCode": "AmazonEC2", "Filters": filters, "FormatVersion": "aws_v1", "MaxResults": 100}
    token = "57r3EXAMPLEujbzWfHF7Ciw==:ywSmZsD3mtpQmQLQ5XfOsIMkYybSj"  # opaque, as in the reference's example
    with Stubber(pricing) as stub:
        stub.add_response("get_products", {"FormatVersion": "aws_v1", "NextToken": token,
                                           "PriceList": [gpu_instance("us-east-1", "g5.xlarge", "1.0060000000")]}, first)
        stub.add_response("get_products", {"FormatVersion": "aws_v1",
                                           "PriceList": [gpu_instance("us-east-1", "g6.xlarge", "0.8048000000")]},
                          {**first, "NextToken": token})
        found = Fetched("aws", NOW.date())
        aws_prices.AwsRefresh(clients, load_catalog([]), NOW).instances("us-east-1", found)
        stub.assert_no_pending_responses()
    assert found.on_demand == {("g5.xlarge", "us-east-1"): 1.006, ("g6.xlarge", "us-east-1"): 0.8048}


def test_spot_price_history_from_moto(aws):
    """moto answers DescribeSpotPriceHistory with every zone offering the type, at a fixed $0.00001 and
    ProductDescription "Linux/UNIX (Amazon VPC)" (moto/ec2/responses/spot_instances.py); the zones are real."""
    clients = _clients(aws)
    found = Fetched("aws", NOW.date())
    aws_prices.AwsRefresh(clients, load_catalog([]), NOW).spot("us-east-1", ["g5.xlarge", "g6e.xlarge"], found)
    from moto.ec2.models.instance_types import INSTANCE_TYPE_OFFERINGS

    offered = {(o["InstanceType"], o["Location"]) for o in INSTANCE_TYPE_OFFERINGS["availability-zone"]["us-east-1"]
               if o["InstanceType"] in ("g5.xlarge", "g6e.xlarge")}
    assert set(found.spot) == offered and len(offered) >= 8
    assert set(found.spot.values()) == {0.00001}


def test_spot_takes_the_latest_entry_per_zone_across_pages(aws):
    """Entries shaped like botocore's DescribeSpotPriceHistory example (ec2 examples-1.json)."""
    clients = _clients(aws)
    ec2 = clients.ec2("us-west-2")

    def entry(zone: str, price: str, when: str, description: str = "Linux/UNIX") -> dict:
        return {"AvailabilityZone": zone, "InstanceType": "g5.xlarge", "ProductDescription": description,
                "SpotPrice": price, "Timestamp": datetime.fromisoformat(when)}

    expected = {"InstanceTypes": ["g5.xlarge"], "ProductDescriptions": ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"],
                "StartTime": NOW, "EndTime": NOW}
    with Stubber(ec2) as stub:
        # The newest entry of us-west-2a comes first; older ones follow, one on the next page.
        stub.add_response("describe_spot_price_history", {"NextToken": "page-2", "SpotPriceHistory": [
            entry("us-west-2a", "0.455000", "2026-11-30T08:00:00+00:00"),
            entry("us-west-2a", "0.431000", "2026-11-30T04:32:53+00:00"),
            entry("us-west-2b", "0.000000", "2026-11-30T01:00:00+00:00"),
            entry("us-west-2c", "1.900000", "2026-11-30T05:00:00+00:00", "Windows"),
        ]}, expected)
        stub.add_response("describe_spot_price_history", {"SpotPriceHistory": [
            entry("us-west-2c", "0.398700", "2026-11-28T23:00:00+00:00", "Linux/UNIX (Amazon VPC)"),
            entry("us-east-1a", "0.300000", "2026-11-30T08:00:00+00:00"),
            entry("us-west-2a", "0.402000", "2026-11-29T11:28:26+00:00"),
        ]}, {**expected, "NextToken": "page-2"})
        found = Fetched("aws", NOW.date())
        aws_prices.AwsRefresh(clients, load_catalog([]), NOW).spot("us-west-2", ["g5.xlarge"], found)
    assert found.spot == {("g5.xlarge", "us-west-2a"): 0.455, ("g5.xlarge", "us-west-2c"): 0.3987}
    assert any("us-west-2b" in s and "is not a positive price" in s for s in found.skipped)


def test_throttling_is_retried_by_botocore_and_gives_up_at_the_attempt_limit(aws):
    clients = _clients(aws, max_attempts=4)
    prices = PriceList(region_products("us-east-1"), throttle=3)
    prices.install(clients.session)
    spot_faults = Faults({"DescribeSpotPriceHistory": (2, "RequestLimitExceeded", 503)})
    spot_faults.install(clients)
    found = _refresh(clients)
    assert prices.throttled == 3 and found.failures == [] and ("g5.xlarge", "us-east-1") in found.on_demand
    assert spot_faults.injected == {"DescribeSpotPriceHistory": 2} and ("g5.xlarge", "us-east-1a") in found.spot

    stubborn = _clients(aws, max_attempts=2)
    PriceList(region_products("us-east-1"), throttle=100).install(stubborn.session)
    failed = _refresh(stubborn)
    assert failed.on_demand == {} and failed.region_items == {}
    assert failed.failures[0].startswith("aws on-demand: ThrottlingException: Rate exceeded")


# --- the command ------------------------------------------------------------------------------------------


@pytest.fixture
def refresh_cli(aws, monkeypatch):
    """The command, its clients on moto and the loopback Price List, at FIXED_NOW's eve."""
    from gpulease.core import clock

    state: dict = {"throttle": 0}

    def plan(args, clouds, regions):
        def make():
            clients = _clients(aws)
            state["prices"] = PriceList(region_products("us-east-1") + region_products("us-west-2") +
                                        region_products("eu-west-1"), throttle=state["throttle"])
            state["prices"].install(clients.session)
            return clients
        return Plan(clouds=clouds, regions=regions, aws_clients=make)

    monkeypatch.setattr(catalog_command, "make_plan", plan)
    with clock.frozen(NOW):
        yield state


def _walk_prices(doc: dict) -> list[float]:
    out = []
    for row in doc.get("instances", []):
        out += list(row.get("prices", {}).values()) + list(row.get("spotPrices", {}).values())
        assert row.get("prices", None) != {} and row.get("spotPrices", None) != {}
    for row in doc.get("regions", []):
        for key, value in row.items():
            if isinstance(value, dict):
                assert value, key
                out += list(value.values())
            elif key.endswith(("GbMonth", "Hour", "Gb")):
                out.append(value)
    return out


def test_refresh_writes_a_dated_override_the_catalog_loads(refresh_cli, tmp_path, capsys):
    out = tmp_path / "prices.yaml"
    assert main(["catalog", "refresh", "--cloud", "aws", "--output", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# Written by `gpulease catalog refresh` at 2026-11-30T09:30:00Z")
    doc = yaml.safe_load(text)
    prices = _walk_prices(doc)
    assert prices and all(isinstance(p, float) and math.isfinite(p) and p > 0 for p in prices)
    assert "nan" not in text.lower() and "inf" not in text.replace("Inf", "").lower()

    refreshed = load_catalog([out])
    g4 = refreshed.get("aws", "g4dn.xlarge")
    assert (g4.prices["us-east-1"], g4.price_date("us-east-1").isoformat()) == (0.5, "2026-11-30")
    assert g4.spot_zone_prices("us-west-2") == {"us-west-2a": 1e-05, "us-west-2b": 1e-05, "us-west-2c": 1e-05}
    g5_2x = refreshed.get("aws", "g5.2xlarge")  # its NaN was skipped: the shipped price and date stay
    assert (g5_2x.prices["us-east-1"], g5_2x.price_date("us-east-1").isoformat()) == (1.212, "2025-06-01")
    new = refreshed.get("aws", "g6.64xlarge")
    assert (new.gpu_model, new.gpu_count, new.gpu_memory_gb, new.interconnect, new.vcpu, new.source) == (
        "L4", 8, 24, "pcie", 256, "aws-price-list-api")
    us = refreshed.region_prices("aws", "us-east-1")
    assert (us.disk_gb_month("gp3"), us.item_date("blockStorageGbMonth.gp3").isoformat()) == (0.07, "2026-11-30")
    assert us.item_date("egressGb").isoformat() == "2025-06-01"  # not refreshed: keeps its date
    report = " ".join(capsys.readouterr().out.split())
    assert "aws │ on-demand │ g4dn.xlarge │ us-east-1 │ 0.526 │ 0.5 │ -4.9%" in report
    assert "aws │ storage │ blockStorageGbMonth.gp3 │ us-east-1 │ 0.08 │ 0.07 │ -12.5%" in report
    assert "aws │ on-demand │ g6.64xlarge │ us-east-1 │ new │ 30 │" in report
    assert "new instance types: aws g6.64xlarge" in report
    assert "skipped: aws g5.2xlarge on-demand in us-east-1: 'NaN' is not a finite number" in report
    assert f"Wrote {out}." in report


def test_refreshed_prices_reach_cost_with_their_dates(refresh_cli, tmp_path, capsys, monkeypatch):
    out = tmp_path / "prices.yaml"
    assert main(["catalog", "refresh", "--cloud", "aws", "--regions", "us-east-1", "--output", str(out)]) == 0
    capsys.readouterr()
    from gpulease.core import clock

    with clock.frozen(FIXED_NOW):
        assert main(["cost", "aws-lora-7b", "--json", "--catalog", str(out)]) == 0
    [result] = json.loads(capsys.readouterr().out)["data"]["stacks"]
    instance = next(line for line in result["lines"] if line["item"].startswith("g6.xlarge"))
    assert (instance["hourlyUsd"], instance["maxHourlyUsd"], instance["priceAsOf"]) == (1e-05, 0.7832, "2026-11-30")
    # Every price this stack uses came from the refresh: instance, disks, address and bucket; none is stale.
    assert {line["priceAsOf"] for line in result["lines"]} == {"2026-11-30"}
    assert result["stalePrices"] == [] and result["pricesAsOf"] == "2026-11-30"


def test_json_report_and_the_change_percentages(refresh_cli, tmp_path, capsys):
    out = tmp_path / "prices.yaml"
    assert main(["catalog", "refresh", "--cloud", "aws", "--regions", "us-east-1", "--output", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    changes = {(c["kind"], c["name"], c["where"]): (c["old"], c["new"], c["percent"]) for c in report["changes"]}
    assert changes[("on-demand", "g4dn.xlarge", "us-east-1")] == (0.526, 0.5, -4.94)
    assert changes[("on-demand", "g6.xlarge", "us-east-1")] == (0.8048, 0.7832, -2.68)
    assert changes[("spot", "g5.xlarge", "us-east-1a")] == (None, 1e-05, None)
    assert ("on-demand", "g5.xlarge", "us-east-1") not in changes and report["unchanged"] >= 1
    assert report["output"] == str(out) and report["failures"] == [] and report["newTypes"] == ["aws g6.64xlarge"]


def test_a_failed_refresh_writes_nothing_unless_partial_is_allowed(refresh_cli, tmp_path, capsys):
    refresh_cli["throttle"] = 10_000  # the Price List throttles every call: on-demand and storage fail
    out = tmp_path / "prices.yaml"
    out.write_text("# Written by `gpulease catalog refresh`: the previous refresh\n")
    assert main(["catalog", "refresh", "--cloud", "aws", "--regions", "us-east-1", "--output", str(out)]) == 1
    text = " ".join(capsys.readouterr().out.split())
    assert "failed: aws us-east-1 on-demand prices: ThrottlingException" in text and "Nothing written" in text
    assert out.read_text() == "# Written by `gpulease catalog refresh`: the previous refresh\n"
    assert main(["catalog", "refresh", "--cloud", "aws", "--regions", "us-east-1", "--output", str(out),
                 "--allow-partial"]) == 1
    assert load_catalog([out]).get("aws", "g5.xlarge").prices["us-east-1"] == 1.006  # nothing refreshed: shipped


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--regions", "us-east-1"], "--regions needs one --cloud"),
        (["--cloud", "aws", "--regions", "us-east-1,Mars 1"], "--regions: Mars 1 is not a region name"),
        (["--cloud", "aws", "--output", "/nonexistent-folder/prices.yaml"], "the folder /nonexistent-folder does not exist"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(refresh_cli, capsys, args, message):
    assert main(["catalog", "refresh", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_missing_aws_credentials_are_exit_2(monkeypatch, tmp_path, capsys):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name in ("AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    assert main(["catalog", "refresh", "--cloud", "aws", "--output", str(tmp_path / "p.yaml")]) == 2
    assert "AWS credentials: no credentials found" in capsys.readouterr().err
    assert not (tmp_path / "p.yaml").exists()
