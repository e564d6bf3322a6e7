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

from gpulease.review.mocks import CloudMocks
from gpulease.review.render import load_stack_file, render
from gpulease.review.replacement import Change, classify, summary
from tests.integration.test_rehearsal import (
    ATTACHMENTS,
    INSTANCES,
    KEPT,
    LATER,
    assert_nothing_lost,
    attachment_of,
    pinned,
    rehearse,
    render_at,
    section,
    stack_id,
)
from tests.support.clock import FIXED_NOW
from tests.support.paths import STACKS_DIR

STACKS = sorted(STACKS_DIR.glob("Pulumi.*.yaml"))
# A cluster (nodes above one) refuses the single-instance phases and the bake: tests/components/test_cluster.py.
EXAMPLES = [p for p in STACKS if "sweep" not in p.name and "cluster" not in p.name]
IMAGES = {"aws:ec2/ami:Ami", "aws:ebs/snapshot:Snapshot", "alicloud:ecs/image:Image", "alicloud:ecs/ecsSnapshot:EcsSnapshot"}
OBJECTS = {"aws:s3/bucketObjectv2:BucketObjectv2", "alicloud:oss/bucketObject:BucketObject"}


def baked_records(r) -> list:
    """The baked record the program writes once its image exists (components/image_bake.py)."""
    return [x for x in r.resources if x.type in OBJECTS and x.name.endswith("-image-baked")]


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
    (record,) = baked_records(after)
    assert moved and all(c.action == "create" and (c.type in IMAGES or c.urn == record.urn) for c in moved), summary(changes)
    # At the bucket root, outside the checkpoint prefix the lifecycle rule expires (image_bake.record_folder).
    key = record.inputs["key"]
    assert key.startswith("_gpulease/") and key.endswith(f"/baked/{stack_id(path)}/{section(after.config)['name']}.json")
    assert record.ignore_changes == ["content"]
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


@pytest.mark.parametrize("path", [p for p in EXAMPLES if "debug" not in p.name], ids=stack_id)
def test_bake_left_on_keeps_the_image_when_the_instance_is_replaced(path: Path) -> None:
    """Bake once: with image.bake still true, an update that replaces the instance (a pinned image) must not fail
    on the new instance's missing ready record; the image and its snapshot stay as they are."""
    config = load_stack_file(path)
    bake(config)
    before = render_at(config, stack_id(path), FIXED_NOW)
    (record,) = baked_records(before)
    changed = pinned(config, "new")  # a pinned image replaces the instance
    bake(changed)  # and image.bake is left set
    region = changed.get("aws:region") or changed.get("alicloud:region")
    mocks = CloudMocks(region=region, now=LATER)
    mocks.ready = False  # the new instance has not passed readiness
    mocks.objects = [record.inputs["key"]]  # what the baking update wrote
    after = render_at(changed, stack_id(path), LATER, prior=before, mocks=mocks)
    changes = classify(before, after)
    assert [c.action for c in changes.values() if c.type in INSTANCES] == ["replace"], summary(changes)
    images = [c for c in changes.values() if c.type in IMAGES]
    assert len(images) == 2 and all(c.action == "same" for c in images), summary(changes)
    assert after.outputs["bakedImage"] == before.outputs["bakedImage"]


@pytest.mark.parametrize("path", [p for p in EXAMPLES if "debug" not in p.name], ids=stack_id)
def test_the_first_bake_still_waits_for_readiness(path: Path) -> None:
    config = load_stack_file(path)
    bake(config)
    region = config.get("aws:region") or config.get("alicloud:region")
    mocks = CloudMocks(region=region, now=FIXED_NOW)
    mocks.ready = False
    r = render(config, stack=stack_id(path), now=FIXED_NOW, mocks=mocks)
    assert r.error is not None and "has not passed readiness" in str(r.error)


# A stack from the baked image (image.fromStack), its render and its instance side on the baked root under a new
# instance id, both halves in one test: tests/integration/test_image_rehearsal.py.


@pytest.mark.parametrize("path", [p for p in EXAMPLES if "debug" not in p.name], ids=stack_id)
def test_another_stacks_baked_record_never_skips_this_stacks_readiness_gate(path: Path) -> None:
    """Two stacks on one bucket and prefix with an experiment of the same name: each bakes only a ready instance."""
    config = load_stack_file(path)
    bake(config)
    (record,) = baked_records(render_at(config, "someone-else", FIXED_NOW))
    region = config.get("aws:region") or config.get("alicloud:region")
    mocks = CloudMocks(region=region, now=FIXED_NOW)
    mocks.ready = False
    mocks.objects = [record.inputs["key"]]  # the other stack's record, under the same prefix
    r = render(config, stack=stack_id(path), now=FIXED_NOW, mocks=mocks)
    assert r.error is not None and "has not passed readiness" in str(r.error)
