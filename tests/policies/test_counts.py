"""A size is a count of instances: a non-negative integer. Anything else (negative, fractional, a boolean, text
that is not ASCII decimal digits, too large) leaves the worst case unknown with the resource and the field named,
never a smaller, zero or negative term of a sum."""

from __future__ import annotations

import json

import pytest

from gpulease.core import vocabulary as v
from gpulease.core.catalog import load_catalog
from gpulease.core.cost import estimate_resources

INSTANCE = "aws:ec2/instance:Instance"
ASG = "aws:autoscaling/group:Group"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
SCHEDULE = "aws:autoscaling/schedule:Schedule"
TAGS = {v.TAG_EXPERIMENT: "x", v.TAG_MAX_RUNTIME_HOURS: "8", v.TAG_BUDGET_USD: "100"}


def _group(max_size, schedule=None):
    lt = (LT, {"instanceType": "p4d.24xlarge"}, {"name": "lt", "urn": "urn:lt"})
    group = (ASG, {"maxSize": max_size, "desiredCapacity": 0, "launchTemplate": {"version": "$Latest"},
                   "name": "gpus", "tags": [{"key": k, "value": val, "propagateAtLaunch": True}
                                             for k, val in TAGS.items()]},
             {"name": "asg", "urn": "urn:asg", "dependencies": {"launchTemplate": ["urn:lt"]}})
    three = (INSTANCE, {"instanceType": "p4d.24xlarge", "tags": TAGS}, {"name": "real"})
    extra = [(SCHEDULE, {"autoscalingGroupName": "gpus", "maxSize": schedule}, {"name": "up"})] if schedule else []
    return [lt, group, three, three, three, *extra]


@pytest.mark.parametrize(("value", "shown"), [
    (-3, "maxSize=-3"), (-1, "maxSize=-1"), ("0x10", "maxSize='0x10'"), (True, "maxSize=True"),
    (1.5, "maxSize=1.5"), ("１００", "maxSize='１００'"), (10**5000, "maxSize=an integer of 16610 bits"),
], ids=["-3", "-1", "hex", "bool", "1.5", "fullwidth", "10**5000"])
def test_a_size_that_is_no_count_leaves_the_worst_case_unknown_and_names_the_field(value, shown):
    cost = estimate_resources(_group(value), region="us-east-1")
    assert not cost.worst_case_known and cost.as_dict()["worst_case_usd"] is None
    reason = f"asg: the size of the autoscaling group is unknown ({shown}"
    assert any(u.startswith(reason) for u in cost.unknown_prices), cost.unknown_prices
    assert "is not a count of instances (a non-negative integer, e.g. 4)" in cost.worst_case_reason
    assert all((line.worst_case_usd or 0) >= 0 and (line.hourly_usd or 0) >= 0 for line in cost.lines)
    assert not cost.experiments[0].worst_case_known


def test_whole_numbers_in_any_form_are_counts():
    hourly = load_catalog().get("aws", "p4d.24xlarge").prices["us-east-1"]
    for value in (4, 4.0, "4", " 4 "):
        cost = estimate_resources(_group(value)[:2], region="us-east-1")
        assert cost.worst_case_known and cost.worst_case_usd == pytest.approx(4 * 8 * hourly), value
    zero = estimate_resources(_group(0)[:2], region="us-east-1")
    assert zero.worst_case_known and zero.worst_case_usd == 0


def test_a_scheduled_size_that_is_no_count_leaves_the_worst_case_unknown():
    cost = estimate_resources(_group(1, schedule="0x64"), region="us-east-1")
    assert not cost.worst_case_known
    assert any("up.maxSize='0x64' is not a count of instances" in u for u in cost.unknown_prices), cost.unknown_prices


BATCH = "aws:batch/computeEnvironment:ComputeEnvironment"
NATIVE_BATCH = "aws-native:batch:ComputeEnvironment"
ENDPOINT_CONFIG = "aws:sagemaker/endpointConfiguration:EndpointConfiguration"
ENDPOINT = "aws:sagemaker/endpoint:Endpoint"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
PAI = "alicloud:pai/service:Service"
ACK_POOL = "alicloud:cs/nodePool:NodePool"
NOT_COUNTS = [-2, -2.5, 1.5, True, "1e1", "１２", 10**5000]


def _batch(type_: str, key: str, value) -> list:
    resources = {"type": "EC2", key: value, "instanceTypes": ["p4d.24xlarge"]}
    return [(type_, {"type": "MANAGED", "computeResources": resources, "tags": TAGS}, {"name": "ce"})]


def _endpoint(count) -> list:
    variant = {"variantName": "v", "modelName": "m", "instanceType": "ml.p4d.24xlarge", "initialInstanceCount": count}
    return [(ENDPOINT_CONFIG, {"name": "cfg", "productionVariants": [variant, {**variant, "initialInstanceCount": 4}]},
             {"name": "cfg", "urn": "urn:cfg"}),
            (ENDPOINT, {"endpointConfigName": "cfg", "tags": TAGS}, {"name": "ep", "dependencies": {
                "endpointConfigName": ["urn:cfg"]}})]


def _node_pool(cpu) -> list:
    spec = {"template": {"metadata": {"labels": {v.TAG_EXPERIMENT: "x"}}, "spec": {"requirements": [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p4d.24xlarge"]}]}},
        "limits": {"cpu": cpu}}
    return [(NODE_POOL, {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "spec": spec}, {"name": "pool"})]


def _pai(count) -> list:
    computing = {"computing": {"instance_type": "ecs.gn7i-c8g1.2xlarge"}}
    if isinstance(count, int) and count > 10**100:  # JSON carries any number of digits; Python prints at most 4300
        config = '{"metadata": {"instance": 1' + "0" * 4000 + '}, "cloud": ' + json.dumps(computing) + "}"
    else:
        config = json.dumps({"metadata": {"instance": count}, "cloud": computing})
    return [(PAI, {"serviceConfig": config, "tags": TAGS}, {"name": "eas"})]


def _ack(value) -> list:
    return [(ACK_POOL, {"clusterId": "c", "instanceTypes": ["ecs.gn7i-c8g1.2xlarge"], "desiredSize": value,
                        "tags": TAGS}, {"name": "ack"})]


READERS = {
    "batch maxVcpus": lambda x: _batch(BATCH, "maxVcpus", x),
    "aws-native batch maxvCpus": lambda x: _batch(NATIVE_BATCH, "maxvCpus", x),
    "sagemaker initialInstanceCount": _endpoint,
    "karpenter limits.cpu": _node_pool,
    "pai metadata.instance": _pai,
    "ack desiredSize": _ack,
}


NOT_COUNT_IDS = ["-2", "-2.5", "1.5", "bool", "text", "fullwidth", "10**5000"]
CASES = [pytest.param(reader, value, id=f"{reader}-{name}") for reader in sorted(READERS)
         for value, name in zip(NOT_COUNTS, NOT_COUNT_IDS, strict=True)
         if not (value == 1.5 and reader == "karpenter limits.cpu")]  # a cpu limit of 1.5 is a quantity (1500m)


@pytest.mark.parametrize(("reader", "value"), CASES)
def test_every_capacity_reader_takes_only_counts(reader, value):
    # Text that float() reads ("1e1") is no count either (ASCII digits are: the provider coerces them, see above).
    cost = estimate_resources(READERS[reader](value), region={"aws": "us-east-1", "alicloud": "cn-hangzhou"})
    assert not cost.worst_case_known and cost.as_dict()["worst_case_usd"] is None, (reader, value)
    what = "a Kubernetes quantity" if reader.startswith("karpenter") else "a count of instances"
    assert any(f"is not {what}" in u for u in cost.unknown_prices), cost.unknown_prices
    assert all((line.worst_case_usd or 0) >= 0 and (line.hourly_usd or 0) >= 0 for line in cost.lines)


def test_a_negative_variant_count_never_cancels_another_variants_cost():
    cost = estimate_resources(_endpoint(-4), region="us-east-1")
    assert any("productionVariants.0.initialInstanceCount=-4 is not a count" in u for u in cost.unknown_prices), \
        cost.unknown_prices


def test_a_batch_desired_vcpus_that_is_no_count_leaves_the_size_unknown():
    resources = {"type": "EC2", "maxVcpus": 96, "desiredVcpus": -96, "instanceTypes": ["p4d.24xlarge"]}
    cost = estimate_resources([(BATCH, {"type": "MANAGED", "computeResources": resources, "tags": TAGS},
                                {"name": "ce"})], region="us-east-1")
    assert any("computeResources.desiredVcpus=-96 is not a count" in u for u in cost.unknown_prices), cost.unknown_prices
    good = {**resources, "desiredVcpus": 96, "maxVcpus": 192}
    cost = estimate_resources([(BATCH, {"type": "MANAGED", "computeResources": good, "tags": TAGS},
                                {"name": "ce"})], region="us-east-1")
    (line,) = [line for line in cost.lines if line.compute]
    assert "× 2 " in line.item and "expected 1 ×" in line.item, line.item
