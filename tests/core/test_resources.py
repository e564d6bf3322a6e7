"""The one reading of gpulease's tag values, which the reaper, the pack and the cost model share."""

from __future__ import annotations

import pytest

from gpulease.core import resources as rt
from gpulease.core import vocabulary as v
from gpulease.core.cost import estimate_resources
from gpulease.inventory.decide import retain


@pytest.mark.parametrize(("value", "read"), [
    ("true", True), ("TRUE", True), (" true ", True), ("false", False), ("False", False),
    ("yes", None), ("1", None), ("", None), (None, None),
])
def test_retain_tag_says_true_false_or_nothing(value, read):
    tags = {} if value is None else {v.TAG_RETAIN: value}
    assert rt.retain_tag(tags) is read
    # The reaper takes the same reading; it keeps what is not explicitly unretained.
    assert retain(tags) is read


@pytest.mark.parametrize(("value", "read"), [
    ("12.5", 12.5), (3, 3.0), ("nan", None), ("inf", None), (float("nan"), None), (True, None), ("", None),
    ("eight", None), (None, None),
])
def test_numbers_are_finite_or_absent(value, read):
    assert rt.number(value) == read


def test_the_cost_model_bills_after_destroy_only_what_is_declared_retained():
    def monthly(retain_value: str | None) -> float:
        tags = {v.TAG_EXPERIMENT: "e", v.TAG_MAX_RUNTIME_HOURS: "2"}
        if retain_value is not None:
            tags[v.TAG_RETAIN] = retain_value
        volume = (rt.AWS_VOLUME, {"size": 100, "type": "gp3", "availabilityZone": "us-east-1a", "tags": tags})
        return estimate_resources([volume]).after_destroy_monthly_usd

    assert monthly(" TRUE ") == monthly("true") > 0
    assert monthly("false") == monthly("yes") == monthly(None) == 0


def test_buckets_and_disks_are_one_list_for_every_reader():
    assert rt.AWS_BUCKET_V2 in rt.BUCKET_TYPES and rt.ALI_BUCKET in rt.BUCKET_TYPES
    assert set(rt.DATA_DISK_TYPES) == {rt.AWS_VOLUME, rt.ALI_ECS_DISK, rt.ALI_DISK}
