"""spot.recover: its default, and what it refuses (one line naming the field and what is accepted)."""

from __future__ import annotations

import pytest

from components.phase import phase_view
from components.spec.load import SpecError, load_stack_spec
from tests.support.specs import experiment

EXP = "gpulease:experiment"
ON_DEMAND = {"market": "on-demand", "onDemandReason": "interactive debugging - cannot be interrupted"}


def load(spec: dict):
    return load_stack_spec("dev", {EXP: spec}).base


@pytest.mark.parametrize(("spec", "recover"), [
    (experiment(), True),
    (experiment(**ON_DEMAND), False),
    (experiment(nodes=2, gpu={"instanceType": "p4d.24xlarge"}), False),
    (experiment(spot={"recover": False}), False),
    (experiment(spot={"recover": None}), True),
    (experiment(spot={}), True),
    (experiment(spot={"recover": False}, **ON_DEMAND), False),
], ids=["spot", "on-demand", "cluster", "opted-out", "null", "empty-section", "on-demand-false"])
def test_recover_default(spec: dict, recover: bool) -> None:
    assert load(spec).spot.recover is recover


@pytest.mark.parametrize(("spec", "message"), [
    (experiment(spot={"recover": True}, **ON_DEMAND),
     f"{EXP}.spot.recover: true needs a spot instance, and market is on-demand (nothing reclaims it); accepted: false "
     "(or omit it) with market: on-demand, or market: spot"),
    (experiment(spot={"recover": True}, nodes=2, gpu={"instanceType": "p4d.24xlarge"}),
     f"{EXP}.spot.recover: true with nodes: 2: each node would come back on its own while the job on the others waits "
     "or fails, so a cluster does not recover (docs/clouds.md#spot-recovery); accepted: false (or omit it) for a "
     "cluster, or nodes: 1"),
    (experiment(spot={"recover": "yes"}), f"{EXP}.spot.recover"),
    (experiment(spot={"recovery": True}), f"{EXP}.spot.recovery"),
], ids=["on-demand", "cluster", "yaml11-yes", "near-miss"])
def test_recover_refused(spec: dict, message: str) -> None:
    with pytest.raises(SpecError) as err:
        load(spec)
    assert message in str(err.value)


def test_recover_without_checkpoints_is_named() -> None:
    with pytest.raises(SpecError) as err:
        load(experiment(spot={"recover": True}, checkpoints={"enabled": False}))
    assert (f"{EXP}.spot.recover: true needs checkpoints to resume from; accepted: checkpoints.enabled: true, or "
            "spot.recover: false") in str(err.value)


def test_prep_phase_does_not_recover() -> None:
    """The preparation phase's instance is on-demand: nothing of it recovers, whatever the training phase says."""
    exp = load(experiment(phase="prep"))
    assert exp.spot.recover is True
    assert phase_view(exp).spot.recover is False
