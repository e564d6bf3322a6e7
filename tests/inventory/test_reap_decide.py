"""The shared decisions on their own (no cloud, no listing): a record that is not managed gets no decision at all,
whatever listed it, for every kind; and the rules read only the shared records and states."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gpulease.core.vocabulary import TAG_RETAIN
from gpulease.inventory.decide import DELETE, KEEP, RELEASE, TERMINATE, ReapSettings, plan_region
from gpulease.inventory.resources import Address, Image, Instance, RegionInventory, Snapshot, SpotRequest, Volume
from tests.support.inventory import NOW, PAST, retain_until, tags

REGION = "r-1"
OLD = NOW - timedelta(days=90)


def fleet(values_for) -> RegionInventory:
    """One expired, otherwise sweepable record of each kind, tagged by ``values_for(kind)``."""
    return RegionInventory(
        REGION,
        instances=[Instance("i-1", REGION, "running", "g5.xlarge", "on-demand", OLD, None, values_for("instance"))],
        spot_requests=[SpotRequest("sir-1", REGION, "open", None, OLD, values_for("spot"))],
        volumes=[Volume("vol-1", REGION, "available", 8, "gp3", (), OLD, {**values_for("volume"), TAG_RETAIN: "false"})],
        addresses=[Address("eipalloc-1", REGION, "192.0.2.1", None, None, values_for("address"))],
        snapshots=[Snapshot("snap-1", REGION, "completed", None, 8, OLD, {**values_for("snap"), **retain_until(PAST)})],
        images=[Image("m-1", REGION, "available", "img", OLD, {**values_for("image"), **retain_until(PAST)})],
    )


def test_every_kind_is_acted_on_when_managed_and_expired():
    decisions = plan_region(fleet(lambda kind: tags(expires=PAST)), ReapSettings(now=NOW))
    assert {d.resource.id: d.action for d in decisions} == {
        "i-1": TERMINATE,
        "sir-1": "cancel-spot-request",
        "vol-1": DELETE,
        "eipalloc-1": RELEASE,
        "snap-1": DELETE,
        "m-1": DELETE,
    }


@pytest.mark.parametrize("kind", ["instance", "spot", "volume", "address", "snap", "image"])
def test_a_record_without_the_managed_tag_gets_no_decision_whoever_listed_it(kind):
    def values(k: str) -> dict[str, str]:
        return tags(expires=PAST, managed=k != kind)

    decisions = plan_region(fleet(values), ReapSettings(now=NOW))
    unmanaged = {"instance": "i-1", "spot": "sir-1", "volume": "vol-1", "address": "eipalloc-1", "snap": "snap-1",
                 "image": "m-1"}[kind]
    assert unmanaged not in {d.resource.id for d in decisions}
    assert len(decisions) == 5


def test_an_expired_snapshot_is_kept_while_its_experiment_runs():
    inventory = RegionInventory(REGION, snapshots=[
        Snapshot("snap-1", REGION, "completed", None, 8, OLD, {**tags(expires=NOW + timedelta(hours=1)),
                                                               **retain_until(PAST)})
    ])
    (decision,) = plan_region(inventory, ReapSettings(now=NOW))
    assert decision.action == KEEP and decision.reason.startswith("its experiment runs until")
