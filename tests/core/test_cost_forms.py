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


def test_a_stack_on_both_clouds_prices_each_resource_in_its_own_clouds_region():
    gpu = ("alicloud:ecs/instance:Instance", {"instanceType": "ecs.gn7i-c8g1.2xlarge", "tags": TAGS}, {"name": "gpu"})
    bucket = ("aws:s3/bucket:Bucket", {"tags": TAGS}, {"name": "results"})
    cost = estimate_resources([bucket, gpu], region={"aws": "us-east-1", "alicloud": "cn-hangzhou"})
    assert {line.item.split(" ")[0]: line.region for line in cost.lines} == {
        "ecs.gn7i-c8g1.2xlarge": "cn-hangzhou", "system": "cn-hangzhou", "bucket": "us-east-1"}
    assert cost.worst_case_known and cost.region == "cn-hangzhou"  # the cloud its compute runs on
    from gpulease.core.catalog.freshness import line_prices

    named = {p.what for p in line_prices(cost.lines, cost.region)}
    assert "ecs.gn7i-c8g1.2xlarge on-demand in cn-hangzhou" in named
    assert any(w.startswith("bucket storage") and w.endswith("in us-east-1") for w in named)


def test_forms_sized_in_vcpus_or_gpus_and_unpriced_services():
    batch = ("aws:batch/computeEnvironment:ComputeEnvironment", {"tags": TAGS, "computeResources": {
        "type": "EC2", "maxVcpus": 768, "instanceTypes": ["p4d.24xlarge"]}}, {"name": "ce"})
    family = ("aws:batch/computeEnvironment:ComputeEnvironment", {"tags": TAGS, "computeResources": {
        "type": "EC2", "maxVcpus": 768, "instanceTypes": ["p4d"]}}, {"name": "family"})
    pool = ("kubernetes:karpenter.sh/v1:NodePool", {"spec": {"limits": {"cpu": "1000", "nvidia.com/gpu": 16},
            "template": {"spec": {"requirements": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p4d.24xlarge"]}]}}}},
            {"name": "pool"})
    cost = estimate_resources([batch, family, pool], region="us-east-1")
    items = {line.resource: line.item for line in cost.lines}
    assert items["ce"].startswith("p4d.24xlarge on-demand × 8 (AWS Batch compute environment max size")  # 768 / 96
    assert items["pool"].startswith("p4d.24xlarge on-demand × 2 (Karpenter NodePool max size")  # 16 GPUs / 8
    assert not cost.worst_case_known and "family: the size of the AWS Batch compute environment is unknown" in (
        cost.worst_case_reason or "")
    eci = ("alicloud:eci/containerGroup:ContainerGroup", {"tags": TAGS, "containers": [{"name": "c", "gpu": 1}]},
           {"name": "eci"})
    from gpulease.core.compute import Registered, unit_of

    unit = unit_of(Registered(eci[0], "eci", "urn:eci", eci[1]), [])
    assert unit is not None and unit.accelerated and unit.describe_types() == "containers[0].gpu=1"
    assert not estimate_resources([eci], region="cn-hangzhou").worst_case_known  # no type: not priced
