"""A size is a count of instances: a non-negative integer. Anything else (negative, fractional, a boolean, text
that is not ASCII decimal digits, too large) leaves the worst case unknown with the resource and the field named,
never a smaller, zero or negative term of a sum."""

from __future__ import annotations

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
