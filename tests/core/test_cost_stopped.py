"""What an experiment costs while a spot reclaim has stopped its instance: its disks and addresses only."""

from __future__ import annotations

import pytest

from gpulease.core import vocabulary as v
from gpulease.core.cost import estimate_resources
from gpulease.core.cost.stopped import stopped_by_reclaim

AWS_INSTANCE = "aws:ec2/instance:Instance"
AWS_VOLUME = "aws:ebs/volume:Volume"
AWS_EIP = "aws:ec2/eip:Eip"
AWS_BUCKET = "aws:s3/bucket:Bucket"
ALI_INSTANCE = "alicloud:ecs/instance:Instance"
ALI_DISK = "alicloud:ecs/ecsDisk:EcsDisk"


def tags(experiment: str = "llama") -> dict[str, str]:
    return {v.TAG_EXPERIMENT: experiment, v.TAG_MAX_RUNTIME_HOURS: "8"}


def spot(kind: str = "persistent", behaviour: str = "stop") -> dict:
    return {"marketType": "spot", "spotOptions": {"spotInstanceType": kind, "instanceInterruptionBehavior": behaviour}}


def aws_stack(market: dict, experiment: str = "llama") -> list[tuple]:
    return [
        (AWS_INSTANCE, {"instanceType": "g6.xlarge", "availabilityZone": "us-east-1a", "instanceMarketOptions": market,
                        "rootBlockDevice": {"volumeSize": 100, "volumeType": "gp3"},
                        "associatePublicIpAddress": False, "tags": tags(experiment)}),
        (AWS_VOLUME, {"size": 200, "type": "gp3", "availabilityZone": "us-east-1a", "tags": tags(experiment)}),
        (AWS_EIP, {"domain": "vpc", "tags": tags(experiment)}),
        (AWS_BUCKET, {"bucket": f"{experiment}-ckpt", "tags": tags(experiment)}),
    ]


def test_a_recovering_spot_instance_costs_its_volumes_and_address_while_stopped():
    cost = estimate_resources(aws_stack(spot()), "us-east-1")
    # us-east-1 gp3 $0.08/GB-month, 730 h a month; a public IPv4 (the Elastic IP) $0.005/h; the bucket and the
    # instance hours are not part of it.
    expected = (100 + 200) * 0.08 / 730 + 0.005
    assert cost.stopped_hourly_usd == pytest.approx(expected)
    assert round(expected, 4) == 0.0379
    assert "while stopped by a reclaim: $0.038/h (volumes and address only)" in cost.notes
    (exp,) = cost.experiments
    assert exp.stopped_hourly_usd == pytest.approx(expected)
    assert cost.as_dict()["stopped_hourly_usd"] == pytest.approx(expected)


# (RunInstances refuses stop with a one-time request; were it sent, the instance would still not be restarted.)
@pytest.mark.parametrize("market", [spot("one-time", "terminate"), spot("persistent", "terminate"), spot("one-time", "stop"),
                                    {"marketType": "spot"}, {}])
def test_an_instance_a_reclaim_terminates_has_no_stopped_line(market):
    cost = estimate_resources(aws_stack(market), "us-east-1")
    assert cost.stopped_hourly_usd is None
    assert not [n for n in cost.notes if "while stopped" in n]


def test_hibernate_and_a_spot_request_resource_count_as_stopped_by_a_reclaim():
    assert stopped_by_reclaim(AWS_INSTANCE, {"instanceMarketOptions": spot("persistent", "hibernate")})
    assert stopped_by_reclaim("aws:ec2/spotInstanceRequest:SpotInstanceRequest",
                              {"spotType": "persistent", "instanceInterruptionBehavior": "stop"})
    assert not stopped_by_reclaim("aws:ec2/spotInstanceRequest:SpotInstanceRequest",
                                  {"spotType": "one-time", "instanceInterruptionBehavior": "terminate"})


def test_an_auto_assigned_public_ipv4_is_counted_while_stopped_so_the_figure_errs_high():
    stack = aws_stack(spot())
    stack[0][1]["associatePublicIpAddress"] = True
    cost = estimate_resources(stack, "us-east-1")
    assert cost.stopped_hourly_usd == pytest.approx((100 + 200) * 0.08 / 730 + 0.005 + 0.005)


def test_a_sweep_gets_one_line_per_recovering_experiment():
    cost = estimate_resources(aws_stack(spot(), "a") + aws_stack(spot("one-time", "terminate"), "b"), "us-east-1")
    assert [n for n in cost.notes if "while stopped" in n] == [
        "while stopped by a reclaim: $0.038/h (volumes and address only)"]
    both = estimate_resources(aws_stack(spot(), "a") + aws_stack(spot(), "b"), "us-east-1")
    assert [n for n in both.notes if "while stopped" in n] == [
        "while stopped by a reclaim: a: $0.038/h (volumes and address only)",
        "while stopped by a reclaim: b: $0.038/h (volumes and address only)",
    ]
    assert both.stopped_hourly_usd == pytest.approx(2 * ((100 + 200) * 0.08 / 730 + 0.005))


def test_an_unpriced_disk_makes_the_stopped_figure_unknown_never_smaller():
    stack = aws_stack(spot())
    stack[1][1]["type"] = "gp9"
    cost = estimate_resources(stack, "us-east-1")
    assert cost.stopped_hourly_usd is None
    assert "while stopped by a reclaim: unknown (a disk or address is unpriced or of unknown size) (volumes and address only)" in cost.notes


def test_alibaba_economical_stop_on_interruption_costs_the_disks():
    disk_tags = {**tags(), v.TAG_RETAIN: "true"}
    cost = estimate_resources([
        (ALI_INSTANCE, {"instanceType": "ecs.gn7i-c8g1.2xlarge", "spotStrategy": "SpotAsPriceGo",
                        "spotInterruptionBehavior": "Stop", "systemDiskCategory": "cloud_essd", "systemDiskSize": 100,
                        "tags": tags()}),
        (ALI_DISK, {"size": 200, "category": "cloud_essd", "tags": disk_tags}),
    ], "cn-hangzhou")
    # cn-hangzhou cloud_essd (PL1) $0.14/GB-month.
    assert cost.stopped_hourly_usd == pytest.approx((100 + 200) * 0.14 / 730)
    assert "while stopped by a reclaim: $0.058/h (volumes and address only)" in cost.notes
    released = estimate_resources([(ALI_INSTANCE, {"instanceType": "ecs.gn7i-c8g1.2xlarge",
                                                   "spotStrategy": "SpotAsPriceGo", "tags": tags()})], "cn-hangzhou")
    assert released.stopped_hourly_usd is None


def test_a_disk_of_unknown_size_makes_the_stopped_figure_unknown_never_zero():
    """A root disk sized by its image and a data disk made from a snapshot: not in the inputs, so the figure while
    stopped is unknown (it was a known $0.0000/h)."""
    stack = aws_stack(spot())
    stack[0][1]["rootBlockDevice"] = {"encrypted": True}
    stack[1] = (AWS_VOLUME, {"snapshotId": "snap-0123456789abcdef0", "availabilityZone": "us-east-1a",
                             "tags": tags()})
    del stack[2]  # no address: nothing at all would be counted
    cost = estimate_resources(stack, "us-east-1")
    assert cost.stopped_hourly_usd is None
    (exp,) = cost.experiments
    assert exp.stopped_hourly_usd is None
    assert "while stopped by a reclaim: unknown (a disk or address is unpriced or of unknown size) (volumes and " \
           "address only)" in cost.notes


@pytest.mark.parametrize("market", [
    {"marketType": "Spot", "spotOptions": {"spotInstanceType": "persistent", "instanceInterruptionBehavior": "stop"}},
    {"marketType": "spot", "spotOptions": {"spotInstanceType": "Persistent", "instanceInterruptionBehavior": "Stop"}},
], ids=["Spot", "Persistent-Stop"])
def test_the_market_options_are_read_in_any_case(market):
    assert stopped_by_reclaim(AWS_INSTANCE, {"instanceMarketOptions": market})
    assert estimate_resources(aws_stack(market), "us-east-1").stopped_hourly_usd == pytest.approx(
        (100 + 200) * 0.08 / 730 + 0.005)


def test_an_instance_takes_a_persistent_stop_request_from_its_launch_template():
    template_urn = "urn:pulumi:s::p::aws:ec2/launchTemplate:LaunchTemplate::lt"
    template = ("aws:ec2/launchTemplate:LaunchTemplate", {"instanceType": "g6.xlarge", "instanceMarketOptions": spot()},
                {"urn": template_urn})
    stack = aws_stack({})
    instance = dict(stack[0][1])
    del instance["instanceMarketOptions"]
    instance["launchTemplate"] = {"id": "lt-0123456789abcdef0"}
    stack[0] = (AWS_INSTANCE, instance, {"urn": "urn:pulumi:s::p::aws:ec2/instance:Instance::i",
                                         "dependencies": {"launchTemplate": [template_urn]}})
    cost = estimate_resources([template, *stack], "us-east-1")
    assert cost.stopped_hourly_usd == pytest.approx((100 + 200) * 0.08 / 730 + 0.005)
    # Market options of its own win over the template's (RunInstances): one-time, terminated, no stopped line.
    stack[0][1]["instanceMarketOptions"] = spot("one-time", "terminate")
    assert estimate_resources([template, *stack], "us-east-1").stopped_hourly_usd is None
