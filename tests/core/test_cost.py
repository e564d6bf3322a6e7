"""Cost estimates: hand-calculated from the catalog's rows, on rendered stacks and on engine-form inputs."""

from __future__ import annotations

import pytest

from gpulease.core import vocabulary as v
from gpulease.core.catalog import HOURS_PER_MONTH, load_catalog
from gpulease.core.cost import estimate_resources, region_from_zone
from gpulease.review.engine import estimate as stack_cost

AWS_INSTANCE = "aws:ec2/instance:Instance"
AWS_VOLUME = "aws:ebs/volume:Volume"
AWS_BUCKET = "aws:s3/bucket:Bucket"


def tags(experiment: str, hours: float | None = 8, **extra: str) -> dict[str, str]:
    out = {v.TAG_EXPERIMENT: experiment, v.TAG_BUDGET_USD: "40", **extra}
    if hours is not None:
        out[v.TAG_MAX_RUNTIME_HOURS] = f"{hours:g}"
    return out


def test_aws_lora_7b_matches_the_hand_calculation(lora_stack, catalog):
    # The stack: one g6.xlarge spot instance (100 GB gp3 root, public IPv4), a 200 GB gp3 data volume and a
    # checkpoint bucket, both retained, for at most 8 hours in us-east-1.
    assert lora_stack.one(AWS_INSTANCE).inputs["instanceType"] == "g6.xlarge"
    g6 = catalog.get("aws", "g6.xlarge")
    us = catalog.region_prices("aws", "us-east-1")
    on_demand = g6.prices["us-east-1"]
    spot = on_demand * (1 - g6.spot_discount)
    gp3 = us.block_storage_gb_month["gp3"]
    root = 100 * gp3 / 730
    data = 200 * gp3 / 730
    bucket = 200 * us.object_storage_gb_month / 730  # assumed as large as the data disk
    ip = us.public_ipv4_hour

    cost = stack_cost(lora_stack)
    assert (cost.cloud, cost.region) == ("aws", "us-east-1")
    assert cost.hourly_usd == pytest.approx(spot + root + data + bucket + ip)
    assert cost.max_hourly_usd == pytest.approx(on_demand + root + data + bucket + ip)
    assert cost.expected_usd == pytest.approx((spot + root + data + bucket + ip) * 8)
    assert cost.worst_case_usd == pytest.approx((on_demand + root + data + bucket + ip) * 8)
    assert cost.after_destroy_monthly_usd == pytest.approx(200 * gp3 + 200 * us.object_storage_gb_month)
    assert cost.unknown_prices == []
    [exp] = cost.experiments
    assert (exp.name, exp.budget_usd, exp.runtime_hours) == ("llama7b-lora", 40.0, 8.0)
    assert exp.worst_case_usd == pytest.approx(cost.worst_case_usd)
    retained = {line.resource for line in cost.lines if line.retained}
    assert retained == {"llama7b-lora-data", "llama7b-lora-checkpoints"}
    assert any("egress" in note for note in cost.notes)


def test_the_engine_form_pairs_alone_give_the_same_answer(lora_stack):
    # The policy pack passes (type, inputs) only; retention then comes from the gpulease:retain tag.
    with_options = stack_cost(lora_stack)
    bare = estimate_resources((r.type, r.inputs) for r in lora_stack.resources)
    assert bare.worst_case_usd == pytest.approx(with_options.worst_case_usd)
    assert bare.after_destroy_monthly_usd == pytest.approx(with_options.after_destroy_monthly_usd)


def test_alibaba_resources_hand_calculated(catalog):
    gn7i = catalog.get("alicloud", "ecs.gn7i-c8g1.2xlarge")
    hz = catalog.region_prices("alicloud", "cn-hangzhou")
    resources = [
        (
            "alicloud:ecs/instance:Instance",
            {
                "instanceType": "ecs.gn7i-c8g1.2xlarge",
                "spotStrategy": "SpotWithPriceLimit",
                "spotPriceLimit": 1.5,
                "systemDiskCategory": "cloud_essd",
                "systemDiskPerformanceLevel": "PL0",
                "systemDiskSize": 120,
                "internetMaxBandwidthOut": 100,
                "availabilityZone": "cn-hangzhou-h",
                "tags": tags("ali", 10),
            },
        ),
        (
            "alicloud:ecs/ecsDisk:EcsDisk",
            {"size": 500, "category": "cloud_essd", "performanceLevel": "PL2", "zoneId": "cn-hangzhou-h", "tags": tags("ali", 10)},
            {"name": "ali-data", "retainOnDelete": True},
        ),
        ("alicloud:oss/bucket:Bucket", {"bucket": "b", "tags": tags("ali", 10, **{v.TAG_RETAIN: "true"})}, {"estimatedGb": 50}),
    ]
    cost = estimate_resources(resources)
    assert cost.region == "cn-hangzhou"
    on_demand = gn7i.prices["cn-hangzhou"]
    spot = on_demand * (1 - gn7i.spot_discount)
    system = 120 * hz.block_storage_gb_month["cloud_essd_pl0"] / 730
    data = 500 * hz.block_storage_gb_month["cloud_essd_pl2"] / 730
    bucket = 50 * hz.object_storage_gb_month / 730
    assert cost.hourly_usd == pytest.approx(spot + system + data + bucket)  # the public IP is billed by traffic
    # The price limit (1.5) is below on-demand, so it caps the worst case.
    assert on_demand > 1.5
    assert cost.worst_case_usd == pytest.approx((1.5 + system + data + bucket) * 10)
    assert cost.after_destroy_monthly_usd == pytest.approx(500 * hz.block_storage_gb_month["cloud_essd_pl2"] + 50 * hz.object_storage_gb_month)


def test_on_demand_spot_cap_disks_iops_and_retained_root(catalog):
    us = catalog.region_prices("aws", "us-west-2")
    g5 = catalog.get("aws", "g5.xlarge")
    resources = [
        (
            AWS_INSTANCE,
            {
                "instanceType": "g5.xlarge",
                "instanceMarketOptions": {"marketType": "spot", "spotOptions": {"maxPrice": "0.6"}},
                "rootBlockDevice": {"volumeSize": 80, "volumeType": "gp3", "deleteOnTermination": False},
                "associatePublicIpAddress": False,
                "tags": tags("a", 5),
            },
        ),
        (AWS_VOLUME, {"size": 300, "type": "gp3", "iops": 6000, "throughput": 250, "availabilityZone": "us-west-2b", "tags": tags("a", 5)}),
        (AWS_VOLUME, {"size": 50, "availabilityZone": "us-west-2b", "tags": tags("a", 5, **{v.TAG_RETAIN: "true"})}),
    ]
    cost = estimate_resources(resources)
    assert cost.region == "us-west-2"
    root = 80 * us.block_storage_gb_month["gp3"]
    fast = 300 * us.block_storage_gb_month["gp3"] + (6000 - 3000) * us.provisioned_iops_month["gp3"] + (250 - 125) * us.throughput_mbps_month["gp3"]
    default = 50 * us.block_storage_gb_month["gp2"]  # a volume without a type is gp2
    disks_hourly = (root + fast + default) / HOURS_PER_MONTH
    spot = g5.prices["us-west-2"] * (1 - g5.spot_discount)
    assert cost.hourly_usd == pytest.approx(spot + disks_hourly)  # no public IP asked for
    assert cost.worst_case_usd == pytest.approx((0.6 + disks_hourly) * 5)
    # The root disk survives termination and the tagged volume is retained; the untagged one is deleted.
    assert cost.after_destroy_monthly_usd == pytest.approx(root + default)

    on_demand = estimate_resources([(AWS_INSTANCE, {"instanceType": "g5.xlarge", "tags": tags("a", 2)})], region="us-west-2")
    assert on_demand.hourly_usd == on_demand.max_hourly_usd == g5.prices["us-west-2"]
    assert any("depends on the subnet" in note for note in on_demand.notes)
    assert any("root disk size is not in the inputs" in note for note in on_demand.notes)


def test_unknown_types_regions_and_runtimes_are_reported_not_guessed():
    cost = estimate_resources([(AWS_INSTANCE, {"instanceType": "g5.99xlarge", "availabilityZone": "us-east-1a", "tags": tags("a")})])
    assert cost.hourly_usd == 0
    assert any("g5.99xlarge" in u and "not in the catalog" in u for u in cost.unknown_prices)

    cost = estimate_resources([(AWS_VOLUME, {"size": 100, "type": "gp3", "availabilityZone": "xx-mars-1a", "tags": tags("a")})])
    assert cost.region == "xx-mars-1"
    assert any("storage and network prices in xx-mars-1" in u for u in cost.unknown_prices)

    cost = estimate_resources([(AWS_INSTANCE, {"instanceType": None, "tags": tags("a")})], region="us-east-1")
    assert cost.hourly_usd == 0 and any("not known before the update" in u for u in cost.unknown_prices)

    cost = estimate_resources([(AWS_INSTANCE, {"instanceType": "g5.xlarge", "tags": tags("a", None)})], region="us-east-1")
    assert cost.hourly_usd > 0 and cost.worst_case_usd == 0
    assert any("no worst case" in u for u in cost.unknown_prices)


def test_sweep_runs_get_their_own_rows_and_the_shared_bucket_its_own():
    resources = [
        (AWS_INSTANCE, {"instanceType": "g6.xlarge", "tags": tags("sw-a", 6)}),
        (AWS_INSTANCE, {"instanceType": "g6e.xlarge", "tags": tags("sw-b", 8)}),
        (AWS_VOLUME, {"size": 100, "type": "gp3", "availabilityZone": "us-east-1a", "tags": tags("sw-a", 6)}),
        (AWS_BUCKET, {"bucket": "shared", "tags": tags("sw", 8, **{v.TAG_RETAIN: "true"})}),
    ]
    cost = estimate_resources(resources)
    rows = {e.name: e for e in cost.experiments}
    assert set(rows) == {"sw-a", "sw-b", "sw"}
    assert rows["sw"].shared and not rows["sw-a"].shared
    catalog = load_catalog([])
    assert rows["sw-b"].worst_case_usd == pytest.approx(catalog.get("aws", "g6e.xlarge").prices["us-east-1"] * 8)
    assert rows["sw-a"].runtime_hours == 6 and rows["sw-b"].runtime_hours == 8
    assert cost.worst_case_usd == pytest.approx(sum(e.worst_case_usd for e in cost.experiments))
    # The bucket is assumed to hold as much as the data disks.
    assert rows["sw"].after_destroy_monthly_usd == pytest.approx(100 * catalog.region_prices("aws", "us-east-1").object_storage_gb_month)


def test_region_comes_from_region_inputs_zones_or_arns():
    instance = {"instanceType": "g5.xlarge", "tags": tags("a")}
    assert estimate_resources([(AWS_INSTANCE, instance)]).region is None
    assert estimate_resources([(AWS_INSTANCE, {**instance, "region": "eu-west-1"})]).region == "eu-west-1"
    arn = {"policy": None, "role": "arn:aws:iam::123456789012:role/x", "target": {"arn": "arn:aws:sqs:us-west-2:123456789012:q"}}
    assert estimate_resources([(AWS_INSTANCE, instance), ("aws:scheduler/schedule:Schedule", arn)]).region == "us-west-2"
    zone = {"size": 10, "availabilityZone": "us-east-1c"}
    assert estimate_resources([(AWS_VOLUME, zone), ("aws:scheduler/schedule:Schedule", arn)]).region == "us-east-1"
    # A policy document (a JSON string) names the region in its resource ARNs.
    doc = {"policy": '{"Statement": [{"Resource": "arn:aws:ec2:ap-south-1:123456789012:instance/*"}]}'}
    assert estimate_resources([(AWS_INSTANCE, instance), ("aws:iam/rolePolicy:RolePolicy", doc)]).region == "ap-south-1"
    # An explicit region wins over what the inputs say.
    assert estimate_resources([(AWS_VOLUME, zone)], region="us-west-2").region == "us-west-2"


def test_each_resource_is_priced_in_its_own_clouds_region_never_the_other_clouds():
    aws_gpu = {"instanceType": "g5.xlarge", "tags": tags("a")}
    ali_gpu = {"instanceType": "ecs.gn7i-c8g1.2xlarge", "tags": tags("a")}
    both = [(AWS_INSTANCE, aws_gpu, {"name": "a"}), ("alicloud:ecs/instance:Instance", ali_gpu, {"name": "b"})]

    def regions(cost) -> dict[str, str | None]:
        return {line.resource: line.region for line in cost.lines if line.compute}

    assert regions(estimate_resources(both, region={"aws": "us-east-1", "alicloud": "cn-hangzhou"})) == {
        "a": "us-east-1", "b": "cn-hangzhou"}
    # Only AWS's region is configured: the Alibaba instance is priced in none, never "in us-east-1".
    cost = estimate_resources(both, region={"aws": "us-east-1"})
    assert regions(cost) == {"a": "us-east-1", "b": None}
    assert "alicloud instance ecs.gn7i-c8g1.2xlarge (no region) (not priced (no region))" in cost.unknown_prices
    # An explicit provider without a region reads no stack config: unknown, never the configured region.
    bare = [(AWS_INSTANCE, aws_gpu, {"name": "a", "explicitProvider": True})]
    assert regions(estimate_resources(bare, region={"aws": "us-east-1"})) == {"a": None}
    west = [(AWS_INSTANCE, aws_gpu, {"name": "a", "explicitProvider": True, "region": "us-west-2"})]
    assert regions(estimate_resources(west, region={"aws": "us-east-1"})) == {"a": "us-west-2"}


@pytest.mark.parametrize(
    ("zone", "region"),
    [("us-east-1a", "us-east-1"), ("us-east-1-bos-1a", "us-east-1"), ("cn-hangzhou-h", "cn-hangzhou"),
     ("ap-southeast-1a", "ap-southeast-1"), ("us-gov-west-1a", "us-gov-west-1"), ("", None)],
)
def test_region_from_zone(zone, region):
    assert region_from_zone(zone) == region
