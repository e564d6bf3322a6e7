"""Each of the reaper's safety rules pinned on its own, where it is enforced, without a cloud: the decisions on the
shared records (retain, state, attachment, grace period, deadline) and every listing's own managed-by check on the
raw answer it was given (AWS DescribeVolumes / DescribeInstances, Alibaba Cloud DescribeDisks / DescribeInstances).
``make mutate --area reaper`` removes each rule in turn; these tests are what notices."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gpulease.core.vocabulary import MANAGED_BY_VALUE, TAG_EXPIRES_AT, TAG_MANAGED_BY, TAG_RETAIN
from gpulease.inventory import alicloud_collect, collect
from gpulease.inventory.aws import AwsTargetError, check_account
from gpulease.inventory.decide import (
    DELETE,
    KEEP,
    RELEASE,
    TERMINATE,
    ReapSettings,
    decide_address,
    decide_instance,
    decide_volume,
    plan_region,
)
from gpulease.inventory.resources import Address, Instance, RegionInventory, Volume
from tests.support.inventory import NOW, tags

REGION = "r-1"
OLD = NOW - timedelta(days=90)


def vol(values: dict[str, str], *, state: str = "available", attached: tuple[str, ...] = ()) -> Volume:
    return Volume("vol-1", REGION, state, 8, "gp3", attached, OLD, values)


def inst(values: dict[str, str]) -> Instance:
    return Instance("i-1", REGION, "running", "g5.xlarge", "on-demand", OLD, None, values)


def addr(values: dict[str, str]) -> Address:
    return Address("eipalloc-1", REGION, "192.0.2.1", None, None, values)


# --- retain -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, "", "yes", "0", "retain"])
def test_a_volume_without_a_readable_retain_tag_is_kept(value: str | None) -> None:
    values = tags(expires=OLD)
    if value is not None:
        values[TAG_RETAIN] = value
    decision = decide_volume(vol(values), ReapSettings(now=NOW), set())
    assert (decision.action, decision.reason) == (KEEP, f"no readable {TAG_RETAIN} tag; treated as retained")


@pytest.mark.parametrize(("value", "action"), [("false", DELETE), (" False ", DELETE), ("true", KEEP), ("TRUE", KEEP)])
def test_only_an_explicit_retain_false_lets_an_expired_volume_go(value: str, action: str) -> None:
    decision = decide_volume(vol({**tags(expires=OLD), TAG_RETAIN: value}), ReapSettings(now=NOW), set())
    assert decision.action == action


# --- state and attachment ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("state", ["creating", "in-use", "attaching", "detaching", "reiniting", "error"])
def test_a_volume_that_is_not_available_is_kept(state: str) -> None:
    decision = decide_volume(vol(tags(expires=OLD, retain=False), state=state), ReapSettings(now=NOW), set())
    assert (decision.action, decision.reason) == (KEEP, f"state is {state}")


def test_an_attached_volume_is_kept_even_when_its_instance_is_being_terminated() -> None:
    volume = vol(tags(expires=OLD, retain=False), attached=("i-1",))
    decision = decide_volume(volume, ReapSettings(now=NOW), {"i-1"})
    assert decision.action == KEEP
    assert decision.reason == "attached to i-1 (being terminated; a later sweep decides)"


# --- the deadline and the grace period --------------------------------------------------------------------------


@pytest.mark.parametrize(("ago", "swept"), [(timedelta(minutes=59), False), (timedelta(hours=1), True)])
def test_nothing_is_swept_before_its_deadline_plus_the_grace_period(ago: timedelta, swept: bool) -> None:
    settings = ReapSettings(now=NOW, grace=timedelta(hours=1))
    values = tags(expires=NOW - ago, retain=False)
    got = [decide_instance(inst(values), settings).action, decide_volume(vol(values), settings, set()).action,
           decide_address(addr(values), settings).action]
    assert got == ([TERMINATE, DELETE, RELEASE] if swept else [KEEP, KEEP, KEEP])
    if not swept:
        assert "in the grace period until" in decide_instance(inst(values), settings).reason


@pytest.mark.parametrize("raw", [None, "", "soon", "2026-13-40T00:00:00Z"])
def test_a_resource_without_a_valid_deadline_is_never_swept(raw: str | None) -> None:
    values = tags(expires=None, retain=False)
    if raw is not None:
        values[TAG_EXPIRES_AT] = raw
    settings = ReapSettings(now=NOW + timedelta(days=3650))
    for decision in (decide_instance(inst(values), settings), decide_volume(vol(values), settings, set()),
                     decide_address(addr(values), settings)):
        assert decision.action == KEEP and decision.reason.endswith("never swept")


# --- managed-by, checked again by every listing on the raw answer ------------------------------------------------

FOREIGN = [{}, {TAG_MANAGED_BY: "someone-else"}, {TAG_MANAGED_BY: MANAGED_BY_VALUE.upper()}]


def _aws_tags(values: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in values.items()]


def _ecs_tags(values: dict[str, str]) -> dict[str, list[dict[str, str]]]:
    return {"Tag": [{"TagKey": k, "TagValue": v} for k, v in values.items()]}


@pytest.mark.parametrize("foreign", FOREIGN)
def test_the_aws_volume_listing_drops_what_is_not_managed(foreign: dict[str, str]) -> None:
    ours = {"VolumeId": "vol-ours", "State": "available", "Size": 8, "Tags": _aws_tags(tags(retain=False))}
    theirs = {"VolumeId": "vol-theirs", "State": "available", "Size": 8,
              "Tags": _aws_tags({**tags(managed=False, retain=False), **foreign})}
    assert [v.id for v in collect.volumes_from([ours, theirs], REGION)] == ["vol-ours"]


@pytest.mark.parametrize("foreign", FOREIGN)
def test_the_aws_instance_listing_drops_what_is_not_managed(foreign: dict[str, str]) -> None:
    ours = {"InstanceId": "i-ours", "State": {"Name": "running"}, "Tags": _aws_tags(tags())}
    theirs = {"InstanceId": "i-theirs", "State": {"Name": "running"},
              "Tags": _aws_tags({**tags(managed=False), **foreign})}
    assert [i.id for i in collect.instances_from([{"Instances": [ours, theirs]}], REGION)] == ["i-ours"]


@pytest.mark.parametrize("foreign", FOREIGN)
def test_the_alibaba_disk_listing_drops_what_is_not_managed(foreign: dict[str, str]) -> None:
    ours = {"DiskId": "d-ours", "Status": "Available", "Tags": _ecs_tags(tags(retain=False))}
    theirs = {"DiskId": "d-theirs", "Status": "Available", "Tags": _ecs_tags({**tags(managed=False), **foreign})}
    assert [d.id for d in alicloud_collect.disks_from([ours, theirs], REGION)] == ["d-ours"]


@pytest.mark.parametrize("foreign", FOREIGN)
def test_the_alibaba_instance_listing_drops_what_is_not_managed(foreign: dict[str, str]) -> None:
    ours = {"InstanceId": "i-ours", "Status": "Running", "Tags": _ecs_tags(tags())}
    theirs = {"InstanceId": "i-theirs", "Status": "Running", "Tags": _ecs_tags({**tags(managed=False), **foreign})}
    assert [i.id for i in alicloud_collect.instances_from([ours, theirs], REGION)] == ["i-ours"]


def test_the_decisions_check_managed_by_again_whatever_a_listing_let_through() -> None:
    foreign = tags(managed=False, expires=OLD, retain=False)
    inventory = RegionInventory(REGION, instances=[inst(foreign)], volumes=[vol(foreign)], addresses=[addr(foreign)])
    assert plan_region(inventory, ReapSettings(now=NOW)) == []


# --- the account allowlist -------------------------------------------------------------------------------------


def test_an_account_off_the_allowlist_is_refused_and_one_on_it_is_not() -> None:
    with pytest.raises(AwsTargetError, match="account 999999999999 is not on the allowlist"):
        check_account("999999999999", ["123456789012"])
    check_account("123456789012", ["123456789012"])
    check_account("999999999999", [])  # no allowlist configured: any account
