"""``ephemeral collect`` reaches a kept stack's bucket in the region the stack ran in: the region is read from its
``availabilityZone`` output for every zone name the clouds use, including Alibaba Cloud zones whose region ends in
a digit (``ap-southeast-1b`` is in ``ap-southeast-1``, the region the kit's own Alibaba Cloud mocks list)."""

from __future__ import annotations

import pytest

from gpulease.cli import ephemeral_collect
from gpulease.review.mocks_alicloud import _ALI_ZONES as ZONES


@pytest.mark.parametrize(("zone", "region"), [
    ("ap-southeast-1b", "ap-southeast-1"),
    ("ap-northeast-1a", "ap-northeast-1"),
    ("eu-central-1a", "eu-central-1"),
    ("us-west-1a", "us-west-1"),
    ("cn-hangzhou-h", "cn-hangzhou"),
])
def test_an_alicloud_zone_names_its_own_region(zone: str, region: str) -> None:
    assert ephemeral_collect.bucket_region({"availabilityZone": zone}, "alicloud") == region


def test_every_zone_of_the_kits_alicloud_regions_maps_back_to_its_region() -> None:
    wrong = {zone: ephemeral_collect.bucket_region({"availabilityZone": zone}, "alicloud")
             for region, zones in ZONES.items() for zone in zones
             if ephemeral_collect.bucket_region({"availabilityZone": zone}, "alicloud") != region}
    assert wrong == {}, f"collect would open the OSS endpoint of a region that does not exist: {wrong}"
