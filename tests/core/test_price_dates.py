"""Price dates in every figure: the current spot price of the chosen zone in the expected cost, the cap in the worst
case, the date of each price in cost/size/plan, stale-price warnings, and what the budget policy says it used."""

from __future__ import annotations

import pytest

from gpulease.core import vocabulary as v
from gpulease.core.catalog import OVERRIDES_ENV, load_catalog
from gpulease.core.cost import estimate_resources
from gpulease.core.sizing.resolve import GpuSpec, resolve_instance_type
from gpulease.review.engine import review
from gpulease.review.report import markdown
from gpulease.review.terminal import print_terminal
from tests.support.clock import FIXED_NOW
from tests.support.policy import (
    AWS_INSTANCE,
    analyze,
    aws_gpu,
    aws_schedule_for,
    checkpoint_bucket,
    found,
    res,
    tags,
)

AWS_VOLUME = "aws:ebs/volume:Volume"
ALI_INSTANCE = "alicloud:ecs/instance:Instance"
ALI_DISK = "alicloud:ecs/ecsDisk:EcsDisk"

def _tags(hours: float = 10) -> dict[str, str]:
    return {v.TAG_EXPERIMENT: "exp", v.TAG_BUDGET_USD: "40", v.TAG_MAX_RUNTIME_HOURS: f"{hours:g}"}


def _spot_instance(**extra) -> tuple[str, dict]:
    inputs = {"instanceType": "g6.xlarge", "instanceMarketOptions": {"marketType": "spot"}, "tags": _tags(), **extra}
    return (AWS_INSTANCE, inputs)


def _volume(zone: str) -> tuple[str, dict]:
    return (AWS_VOLUME, {"size": 100, "type": "gp3", "availabilityZone": zone, "tags": _tags()})


def _instance_line(cost):
    """The instance's own line (its disks and address have their own)."""
    return next(line for line in cost.lines if line.type in (AWS_INSTANCE, ALI_INSTANCE) and " spot " in line.item)


def test_expected_cost_uses_the_current_spot_price_of_the_disk_s_zone_and_the_worst_case_keeps_the_cap(fresh_g6):
    catalog = load_catalog([fresh_g6])
    cost = estimate_resources([_spot_instance(), _volume("us-east-1b")], "us-east-1", catalog=catalog)
    line = _instance_line(cost)
    assert (line.hourly_usd, line.max_hourly_usd) == (0.2977, 0.8)  # us-east-1b's spot price; the on-demand cap
    assert line.expected_usd == pytest.approx(0.2977 * 10) and line.worst_case_usd == pytest.approx(8.0)
    assert (line.price_as_of, line.cap_as_of) == ("2026-11-30", None)  # both prices from the refresh
    assert "$0.298/h in us-east-1b on 2026-11-30" in line.item


def test_the_instance_s_own_zone_wins_and_an_unknown_zone_takes_the_region_s_highest(fresh_g6):
    catalog = load_catalog([fresh_g6])
    own = estimate_resources([_spot_instance(availabilityZone="us-east-1a"), _volume("us-east-1b")], "us-east-1",
                             catalog=catalog)
    assert _instance_line(own).hourly_usd == 0.3511
    unknown = estimate_resources([_spot_instance()], "us-east-1", catalog=catalog)
    line = _instance_line(unknown)
    assert line.hourly_usd == 0.4102 and "the highest of 3 zone(s) in us-east-1" in line.item
    unpriced_zone = estimate_resources([_spot_instance(availabilityZone="us-east-1f")], "us-east-1", catalog=catalog)
    assert _instance_line(unpriced_zone).hourly_usd == 0.4102


def test_a_spot_cap_below_the_current_price_bounds_both_figures(fresh_g6):
    catalog = load_catalog([fresh_g6])
    capped = _spot_instance(instanceMarketOptions={"marketType": "spot", "spotOptions": {"maxPrice": "0.25"}})
    line = _instance_line(estimate_resources([capped, _volume("us-east-1a")], "us-east-1", catalog=catalog))
    assert (line.hourly_usd, line.max_hourly_usd) == (0.25, 0.25)
    assert (line.price_as_of, line.cap_as_of) == ("2026-11-30", None)  # the cap is the stack's own, not a price


def test_without_current_spot_prices_the_estimate_and_the_shipped_dates_stay():
    cost = estimate_resources([_spot_instance(), _volume("us-east-1a")], "us-east-1", catalog=load_catalog([]))
    line = _instance_line(cost)
    g6 = load_catalog([]).get("aws", "g6.xlarge")
    assert line.hourly_usd == pytest.approx(0.8048 * (1 - g6.spot_discount)) and "est. 60% off" in line.item
    assert line.price_as_of == "2025-06-01" and cost.prices_as_of == "2025-06-01"
    assert cost.price_catalog == "shipped catalog of 2025-06-01"
    assert all(line.price_as_of == "2025-06-01" for line in cost.lines)  # disks too


def test_a_spot_line_with_a_fresh_spot_price_and_a_stale_cap_carries_both_dates(tmp_path):
    path = tmp_path / "spot-only.yaml"
    path.write_text("instances:\n  - {cloud: aws, type: g6.xlarge, spotPrices: {us-east-1a: 0.33}, asOf: 2026-11-30}\n")
    cost = estimate_resources([_spot_instance(), _volume("us-east-1a")], "us-east-1", catalog=load_catalog([path]))
    line = _instance_line(cost)
    assert (line.hourly_usd, line.max_hourly_usd) == (0.33, 0.8048)
    assert (line.price_as_of, line.cap_as_of) == ("2026-11-30", "2025-06-01")
    assert cost.prices_as_of == "2025-06-01"  # the oldest price used: the shipped cap and disk prices


def test_alibaba_spot_uses_the_ecs_disk_zone(tmp_path):
    path = tmp_path / "ali.yaml"
    path.write_text("instances:\n  - {cloud: alicloud, type: ecs.gn7i-c8g1.2xlarge,"
                    " spotPrices: {cn-hangzhou-h: 0.61, cn-hangzhou-i: 0.72}, asOf: 2026-11-30}\n")
    instance = (ALI_INSTANCE, {"instanceType": "ecs.gn7i-c8g1.2xlarge", "spotStrategy": "SpotAsPriceGo", "tags": _tags()})
    disk = (ALI_DISK, {"size": 100, "category": "cloud_essd", "zoneId": "cn-hangzhou-h", "tags": _tags()})
    line = _instance_line(estimate_resources([instance, disk], "cn-hangzhou", catalog=load_catalog([path])))
    assert (line.hourly_usd, line.max_hourly_usd) == (0.61, 1.93)


def test_cheapest_fit_uses_refreshed_prices(tmp_path, monkeypatch):
    gpu = GpuSpec.model_validate({"gpuMemoryGb": 24, "count": 1})
    assert resolve_instance_type("aws", "us-east-1", gpu).type == "g6.xlarge"  # shipped: L4 at 0.8048 is cheapest
    path = tmp_path / "refreshed.yaml"
    path.write_text("instances:\n  - {cloud: aws, type: g5.xlarge, prices: {us-east-1: 0.75}, pricesAsOf: {us-east-1: 2026-11-30},"
                    " spotPrices: {us-east-1a: 0.30}, asOf: 2026-11-30}\n")
    monkeypatch.setenv(OVERRIDES_ENV, str(path))
    assert resolve_instance_type("aws", "us-east-1", gpu).type == "g5.xlarge"


# --- plan and the budget policy -----------------------------------------------------------------------------


def test_plan_reports_price_dates_per_experiment_and_the_catalog(monkeypatch, fresh_g6):
    from rich.console import Console

    monkeypatch.setenv(OVERRIDES_ENV, str(fresh_g6))
    reviews = review(["aws-lora-7b"], now=FIXED_NOW)
    text = markdown(reviews)
    assert "| experiment | per hour | max per hour | runtime | worst case | budget | prices as of |" in text
    assert "| llama7b-lora |" in text and "| 2025-06-01 |" in text  # the experiment's oldest price: its disks
    assert f"Oldest price used: 2025-06-01 (548 days old), from the shipped catalog of 2025-06-01, overrides: {fresh_g6}." in text
    console = Console(record=True, width=200)
    print_terminal(reviews, console)
    assert "prices: oldest used 2025-06-01 (548 days old), from the shipped catalog of 2025-06-01, overrides:" in console.export_text()


def _stale_hits(result):
    return [hit for hit in found(result) if hit[0] == "budget-prices-fresh"]


def test_stale_price_advisory_names_the_prices_and_follows_the_configured_age():
    stack = (res(AWS_INSTANCE, "gpu", aws_gpu()), aws_schedule_for("gpu"), *checkpoint_bucket())
    [(policy, level, resource, detail)] = _stale_hits(analyze(*stack))
    assert (policy, level, resource) == ("budget-prices-fresh", "advisory", None)
    assert detail.startswith("the cost estimate and the budget check used prices older than 30 days: "
                             "2025-06-01 (548 days old): ")
    assert "g5.xlarge spot (est. 60% off $1.006/h) in us-east-1" in detail and "(shipped catalog of 2025-06-01)" in detail
    assert _stale_hits(analyze(*stack, config={"budget-prices-fresh": {"maxPriceAgeDays": 600}})) == []
    assert _stale_hits(analyze(*stack, config={"budget-prices-fresh": {"maxPriceAgeDays": 500}}))


def test_fresh_prices_clear_the_advisory(tmp_path, monkeypatch):
    # Every price the stack uses re-dated to the day before NOW: nothing is stale.
    path = tmp_path / "fresh.yaml"
    path.write_text(
        "instances:\n  - {cloud: aws, type: g5.xlarge, prices: {us-east-1: 1.006}, asOf: 2026-11-30}\n"
        "regions:\n  - {cloud: aws, region: us-east-1, blockStorageGbMonth: {gp3: 0.08}, objectStorageGbMonth: 0.023,"
        " publicIpv4Hour: 0.005, asOf: 2026-11-30}\n"
    )
    monkeypatch.setenv(OVERRIDES_ENV, str(path))
    stack = (res(AWS_INSTANCE, "gpu", aws_gpu()), aws_schedule_for("gpu"), *checkpoint_bucket())
    assert _stale_hits(analyze(*stack)) == []


def test_budget_violation_says_which_prices_it_used(fresh_g6, monkeypatch):
    monkeypatch.setenv(OVERRIDES_ENV, str(fresh_g6))
    gpu = aws_gpu(instanceType="g6.xlarge", tags=tags(budget="1"))
    result = analyze(res(AWS_INSTANCE, "gpu", gpu), aws_schedule_for("gpu", 8), *checkpoint_bucket())
    [hit] = [h for h in found(result) if h[0] == "budget-worst-case"]
    detail = hit[3]
    assert "exceeds budgetUsd $1.00 (the gpulease:budget-usd tag)" in detail
    assert "prices used in us-east-1: g6.xlarge spot ($0.410/h, the highest of 3 zone(s) in us-east-1 on 2026-11-30)" \
           " (2026-11-30)" in detail
    assert "storage and addresses (2025-06-01)" in detail
    assert detail.endswith(f"shipped catalog of 2025-06-01, overrides: {fresh_g6})")


def test_invalid_max_price_age_config_is_refused():
    from gpulease.review.policy_runner import PolicyConfigError, PolicyRunner

    with pytest.raises(PolicyConfigError, match="budget-prices-fresh: maxPriceAgeDays: -1 is less than the minimum of 0"):
        PolicyRunner(config={"budget-prices-fresh": {"maxPriceAgeDays": -1}})
