"""The cost of any program: the configured region, unpriced types listed, unknown worst cases, forms × max size."""

from __future__ import annotations

import pytest

from gpulease.core import vocabulary as v
from gpulease.core.catalog import load_catalog
from gpulease.core.cost import estimate_resources

INSTANCE = "aws:ec2/instance:Instance"
ASG = "aws:autoscaling/group:Group"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
TAGS = {v.TAG_EXPERIMENT: "x", v.TAG_MAX_RUNTIME_HOURS: "8", v.TAG_BUDGET_USD: "100"}


def on_demand(instance_type: str, region: str) -> float:
    return load_catalog().get("aws", instance_type).prices[region]


def test_the_configured_region_prices_an_instance_whose_inputs_name_none():
    cost = estimate_resources([(INSTANCE, {"instanceType": "g5.xlarge", "tags": TAGS})], region="us-west-2")
    assert cost.region == "us-west-2" and cost.unknown_prices == []
    assert cost.worst_case_usd == pytest.approx(8 * on_demand("g5.xlarge", "us-west-2"))


def test_an_explicit_providers_region_wins_over_the_stacks():
    cost = estimate_resources([(INSTANCE, {"instanceType": "g5.xlarge", "tags": TAGS}, {"region": "eu-west-1"})],
                              region="us-east-1")
    assert cost.lines[0].max_hourly_usd == pytest.approx(on_demand("g5.xlarge", "eu-west-1"))


def test_unknown_types_are_listed_and_free_ones_are_not():
    cost = estimate_resources([
        ("aws:rds/instance:Instance", {"instanceClass": "db.t4g.micro"}, {"name": "db"}),
        ("aws:ec2/vpc:Vpc", {"cidrBlock": "10.0.0.0/16"}, {"name": "vpc"}),
        ("aws:iam/role:Role", {}, {"name": "role"}),
        (INSTANCE, {"instanceType": "g5.xlarge", "tags": TAGS}),
    ], region="us-east-1")
    assert cost.unknown_prices == [
        "not priced: aws:rds/instance:Instance 'db' db.t4g.micro (a resource type the estimate does not price)"]
    # What is not priced makes the worst case unknown, in the dict (JSON) form too: null with the reason.
    assert not cost.worst_case_known and cost.worst_case_reason == cost.unknown_prices[0]
    assert cost.as_dict()["worst_case_usd"] is None and cost.as_dict()["worst_case_known"] is False
    # The database belongs to no experiment: the instance's own experiment keeps its known worst case, the stack's
    # (which would include the database) is unknown.
    assert [(e.name, e.worst_case_known, e.worst_case_reason) for e in cost.experiments] == [("x", True, None)]


def test_an_unpriced_instance_makes_the_worst_case_unknown_not_zero():
    cost = estimate_resources([(INSTANCE, {"instanceType": "p6e-gb200.36xlarge", "tags": TAGS})], region="us-east-1")
    assert not cost.worst_case_known and not cost.experiments[0].worst_case_known
    assert "aws instance p6e-gb200.36xlarge in us-east-1 (not in the catalog)" in cost.unknown_prices


def test_a_group_counts_its_max_size_of_its_templates_type():
    lt = (LT, {"instanceType": "g5.2xlarge"}, {"name": "lt", "urn": "urn:lt"})
    group = (ASG, {"maxSize": 5, "desiredCapacity": 1, "launchTemplate": {"version": "$Latest"}, "tags": [
        {"key": k, "value": val, "propagateAtLaunch": True} for k, val in TAGS.items()]},
        {"name": "asg", "urn": "urn:asg", "dependencies": {"launchTemplate": ["urn:lt"]}})
    cost = estimate_resources([lt, group], region="us-east-1")
    (line,) = [x for x in cost.lines if x.compute]
    assert line.item.startswith("g5.2xlarge on-demand × 5 (autoscaling group max size; expected 1 ×")
    assert line.worst_case_usd == pytest.approx(5 * 8 * on_demand("g5.2xlarge", "us-east-1"))
    assert line.expected_usd == pytest.approx(1 * 8 * on_demand("g5.2xlarge", "us-east-1"))
