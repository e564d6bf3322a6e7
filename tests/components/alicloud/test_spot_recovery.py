"""Spot recovery on Alibaba Cloud under mocks: with ``spot.recover`` a reclaim stops the instance in economical mode
(``Stop``), the release time still ends it at the deadline, and nothing is registered that could start an instance
later (no OOS, ESS or other timer): the only way back is ``gpulease resume`` (tests/cli/test_resume.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from components.alicloud.instance import market_options
from components.alicloud.spot_recovery import STOP, TERMINATE, interruption_behavior, recovers
from tests.support.alicloud import INSTANCE, ali_experiment, render_ali

DEADLINE = "2026-12-01T16:00:00Z"  # FIXED_NOW + 8 h: the shared experiment's deadline


@pytest.fixture
def recover():
    """An experiment's ``spot.recover`` set per test (the spec's default is true on spot with checkpoints)."""

    def experiment(value: bool, **fields):
        return ali_experiment(spot={"recover": value}, **fields)

    return experiment


def test_recover_stops_the_reclaimed_instance_and_keeps_the_deadline(recover) -> None:
    r = render_ali(recover(True))
    assert r.error is None, r.error
    inputs = r.one(INSTANCE).inputs
    assert inputs["spotInterruptionBehavior"] == "Stop"
    assert (inputs["instanceChargeType"], inputs["spotStrategy"]) == ("PostPaid", "SpotAsPriceGo")
    # The deadline ECS keeps is the same with recovery: a stopped instance is still released at it.
    assert inputs["autoReleaseTime"] == DEADLINE


def test_recover_off_releases_on_reclaim(recover) -> None:
    inputs = render_ali(recover(False)).one(INSTANCE).inputs
    assert inputs["spotInterruptionBehavior"] == "Terminate" and inputs["autoReleaseTime"] == DEADLINE


def test_recover_false_releases_on_reclaim() -> None:
    spec = SimpleNamespace(market="spot", max_spot_price_usd=None, spot=SimpleNamespace(recover=False))
    assert market_options(spec)["spot_interruption_behavior"] == TERMINATE  # type: ignore[arg-type]


def test_on_demand_never_gets_an_interruption_behaviour() -> None:
    spec = SimpleNamespace(market="on-demand", spot=SimpleNamespace(recover=True), max_spot_price_usd=None)
    assert not recovers(spec)  # type: ignore[arg-type]
    assert "spot_interruption_behavior" not in market_options(spec)  # type: ignore[arg-type]


def test_only_a_true_recover_stops() -> None:
    for value, expected in ((True, STOP), (False, TERMINATE), (None, TERMINATE), ("true", TERMINATE)):
        spec = SimpleNamespace(market="spot", spot=SimpleNamespace(recover=value))
        assert interruption_behavior(spec) == expected, value  # type: ignore[arg-type]


def test_nothing_is_registered_that_could_start_an_instance_later(recover) -> None:
    """No scheduled start: every type the recovering stack registers is one the stack registers without recovery,
    and none is a timer, an orchestration or a scaling group (which could start or launch after the deadline)."""
    without = {x.type for x in render_ali(recover(False)).resources}
    with_recovery = {x.type for x in render_ali(recover(True)).resources}
    assert with_recovery == without
    assert not [t for t in with_recovery if t.startswith(("alicloud:oos/", "alicloud:ess/", "alicloud:fc/",
                                                          "alicloud:eventbridge/"))]


def test_turning_recovery_on_replaces_the_instance_and_keeps_the_disk(recover) -> None:
    """The interruption mode is set only at creation: a running stack that turns spot.recover on gets a new instance
    (delete-before-replace, its attachment first), never an in-place change the cloud would not apply; the data
    disk is kept and attached to the new instance."""
    from gpulease.review.replacement import classify, replaced
    from tests.support.alicloud import DISK, DISK_ATTACHMENT

    before = render_ali(recover(False))
    after = render_ali(recover(True), prior=before)
    changes = classify(before, after)
    (instance,) = replaced(changes, INSTANCE)
    assert instance.triggers == ["spotInterruptionBehavior"] and instance.delete_before_replace is True
    assert [c.action for c in changes.values() if c.type == DISK] == ["same"]
    assert [(c.action, c.delete_before_replace) for c in replaced(changes, DISK_ATTACHMENT)] == [("replace", True)]


def test_a_cluster_does_not_recover_on_alibaba_cloud_either(recover) -> None:
    """The spec refuses recovery for a cluster on both clouds (components/spec/spot.py); by default its nodes are
    released on a reclaim."""
    refused = render_ali(recover(True, nodes=2))
    assert refused.resources == [] and "spot.recover: true with nodes: 2" in refused.error
    r = render_ali(ali_experiment(nodes=2))
    assert r.error is None, r.error
    assert {x.inputs["spotInterruptionBehavior"] for x in r.of_type(INSTANCE)} == {"Terminate"}
    assert {x.inputs["autoReleaseTime"] for x in r.of_type(INSTANCE)} == {DEADLINE}
