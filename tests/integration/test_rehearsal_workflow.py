"""The replacement rehearsal for the workflow before training: every phase switch and the bake, rendered before and
after on the example stacks, the diff classified with the replace-trigger table (gpulease/review/replacement.py).

What must hold: switching phase replaces only the instance (delete-before-replace, with its disk attachment) and
what serves it; the data disk and the bucket are never replaced or deleted; parking removes the instance and keeps
both. Baking adds the snapshot and the image and changes nothing else; turning it off later forgets them (they are
retained on destroy) without touching the instance.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpulease.review.replacement import Change, summary
from tests.integration.test_rehearsal import (
    ATTACHMENTS,
    INSTANCES,
    KEPT,
    assert_nothing_lost,
    attachment_of,
    rehearse,
    section,
    stack_id,
)
from tests.support.paths import STACKS_DIR

STACKS = sorted(STACKS_DIR.glob("Pulumi.*.yaml"))
# A cluster (nodes above one) refuses the single-instance phases and the bake: tests/components/test_cluster.py.
EXAMPLES = [p for p in STACKS if "sweep" not in p.name and "cluster" not in p.name]
IMAGES = {"aws:ec2/ami:Ami", "aws:ebs/snapshot:Snapshot", "alicloud:ecs/image:Image", "alicloud:ecs/ecsSnapshot:EcsSnapshot"}


def phase(name: str) -> Callable[[dict[str, Any]], None]:
    def change(config: dict[str, Any]) -> None:
        section(config)["phase"] = name
        # Parking keeps the disk: the spec refuses parked with dataDisk.retain: false (the debug stacks' own).
        section(config).setdefault("dataDisk", {})["retain"] = True

    return change


def start_in(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def start(config: dict[str, Any]) -> dict[str, Any]:
        phase(name)(config)
        return config

    return start


def instance_changes(changes: dict[str, Change]) -> list[Change]:
    return [c for c in changes.values() if c.type in INSTANCES]


def assert_only_the_instance_is_replaced(after, changes: dict[str, Change]) -> None:
    assert_nothing_lost(changes)
    instances = instance_changes(changes)
    assert instances and all(i.action == "replace" and i.delete_before_replace for i in instances), summary(changes)
    for inst in instances:
        attachment = changes[attachment_of(after, inst.urn).urn]
        assert attachment.action == "replace" and attachment.delete_before_replace, summary(changes)
    for c in changes.values():
        if c.type in KEPT:
            assert c.action in ("same", "update"), summary(changes)
            assert not [p for p in c.changed if p.startswith(("availabilityZone", "zoneId", "size", "bucket"))], summary(changes)


@pytest.mark.parametrize(("start", "target"), [("train", "prep"), ("prep", "train")])
@pytest.mark.parametrize("path", EXAMPLES, ids=stack_id)
def test_switching_phase_replaces_only_the_instance(path: Path, start: str, target: str) -> None:
    _, after, changes = rehearse(path, phase(target), start=start_in(start))
    assert_only_the_instance_is_replaced(after, changes)
    types = {c.type for c in instance_changes(changes)}
    for inst in after.resources:
        if inst.type in types:
            assert (inst.inputs["tags"].get("gpulease:on-demand-reason", "").startswith("preparation")) == (target == "prep")


@pytest.mark.parametrize("path", EXAMPLES, ids=stack_id)
def test_parking_removes_the_instance_and_keeps_the_disk_and_bucket(path: Path) -> None:
    before, after, changes = rehearse(path, phase("parked"), start=start_in("train"))
    assert_nothing_lost(changes)
    gone = {c.type for c in changes.values() if c.action == "delete"}
    assert INSTANCES & gone and ATTACHMENTS & gone, summary(changes)
    kept = [c for c in changes.values() if c.type in KEPT]
    assert kept and all(c.action in ("same", "update") for c in kept), summary(changes)
    for name, out in after.outputs["experiments"].items():
        assert out["instanceId"] is None and out["dataVolumeId"] == before.outputs["experiments"][name]["dataVolumeId"]


@pytest.mark.parametrize("path", EXAMPLES, ids=stack_id)
def test_unparking_creates_an_instance_on_the_same_disk(path: Path) -> None:
    before, after, changes = rehearse(path, phase("train"), start=start_in("parked"))
    assert_nothing_lost(changes)
    created = {c.type for c in changes.values() if c.action == "create"}
    assert INSTANCES & created and ATTACHMENTS & created, summary(changes)
    for name, out in after.outputs["experiments"].items():
        assert out["dataVolumeId"] == before.outputs["experiments"][name]["dataVolumeId"]


def bake(config: dict[str, Any]) -> None:
    section(config).setdefault("image", {})["bake"] = True


@pytest.mark.parametrize("path", [p for p in EXAMPLES if "debug" not in p.name], ids=stack_id)
def test_baking_adds_the_image_and_changes_nothing_else(path: Path) -> None:
    _, after, changes = rehearse(path, bake)
    moved = [c for c in changes.values() if c.action != "same"]
    assert moved and all(c.type in IMAGES and c.action == "create" for c in moved), summary(changes)
    assert "bakedImage" in after.outputs


@pytest.mark.parametrize("path", [p for p in EXAMPLES if "debug" not in p.name], ids=stack_id)
def test_a_baked_image_outlives_the_bake_setting_and_the_instance(path: Path) -> None:
    before, _, changes = rehearse(path, lambda c: section(c)["image"].update(bake=False), start=lambda c: (bake(c), c)[1])
    images = [c for c in changes.values() if c.type in IMAGES]
    # Removed from the program: the engine drops them from the stack, and retainOnDelete keeps them in the cloud
    # (the reaper deletes them after gpulease:retain-until); the instance is untouched.
    assert images and all(c.action == "delete" for c in images), summary(changes)
    baked = [res for res in before.resources if res.type in IMAGES]
    assert len(baked) == 2 and all(res.retain_on_delete for res in baked)
    assert all(c.action == "same" for c in instance_changes(changes)), summary(changes)
