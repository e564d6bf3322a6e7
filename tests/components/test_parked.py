"""A parked experiment keeps its data disk on both clouds: retained on destroy and tagged so (retain=true and
phase=parked), so that neither ``pulumi destroy`` nor the reaper removes it; ``dataDisk.retain: false`` with
``phase: parked`` is refused before anything is registered."""

from __future__ import annotations

import pytest

from gpulease.core import vocabulary as v
from tests.support.alicloud import ali_experiment, render_ali
from tests.support.specs import experiment, render_experiment

DISKS = {"aws:ebs/volume:Volume", "alicloud:ecs/ecsDisk:EcsDisk"}


def rendered(cloud: str, **overrides):
    r = (render_experiment(experiment(**overrides)) if cloud == "aws"
         else render_ali(ali_experiment(**overrides)))
    assert r.error is None, r.error
    return r


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_a_parked_disk_is_retained_and_tagged_parked(cloud: str) -> None:
    r = rendered(cloud, phase="parked", dataDisk={"retain": True})
    (disk,) = [x for x in r.resources if x.type in DISKS]
    assert disk.retain_on_delete is True
    assert disk.inputs["tags"][v.TAG_RETAIN] == "true"
    assert disk.inputs["tags"][v.TAG_PHASE] == v.PHASE_PARKED


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_parking_a_disk_that_is_not_retained_is_refused_naming_both_fields(cloud: str) -> None:
    r = (render_experiment(experiment(phase="parked", dataDisk={"retain": False})) if cloud == "aws"
         else render_ali(ali_experiment(phase="parked", dataDisk={"retain": False})))
    assert r.error is not None and "dataDisk.retain" in r.error and "phase: parked" in r.error
    assert [x for x in r.resources if x.custom] == []


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_a_training_disk_follows_its_retain_setting_and_is_not_tagged_parked(cloud: str) -> None:
    r = rendered(cloud, dataDisk={"retain": False}, market="on-demand", onDemandReason="a short interactive test",
                 checkpoints={"enabled": False})
    (disk,) = [x for x in r.resources if x.type in DISKS]
    assert disk.retain_on_delete is False
    assert disk.inputs["tags"][v.TAG_RETAIN] == "false"
    assert v.TAG_PHASE not in disk.inputs["tags"]
