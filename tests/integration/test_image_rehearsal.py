"""The image rehearsal, both halves joined, on every example stack that can bake (both clouds): render the stack
with ``image.bake: true`` and boot the instance-side code its user-data carries on a root folder (the watchdog's
state, the heartbeat, the ready and verify records, the authorized key: what the system disk, and so the image,
holds); then render a later stack with ``image.fromStack`` naming it and boot ITS settings on that same root under a
new instance id, with the tag reads failing (as on a first boot on Alibaba Cloud, whose role is attached after the
instance exists). What the new instance must start with: its own deadline (its first boot + ITS stack's
``maxRuntimeHours``), its own spend, no ready or verify record, the old authorized key gone."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from components.userdata import SETTINGS_PATH
from gpulease.core import vocabulary as v
from gpulease.core.vocabulary import parse_rfc3339
from gpulease.review.render import Rendering, load_stack_file
from instance import instance_setup
from tests.integration.test_rehearsal import render_at, section, stack_id
from tests.integration.test_rehearsal_workflow import EXAMPLES, IMAGES, bake
from tests.support.clock import FIXED_NOW
from tests.support.instance import MetadataServer, MetadataState, iso, make_rig, run_in_process
from tests.support.userdata import cloud_config, decode, files

HOUR = 3600.0
BAKEABLE = [p for p in EXAMPLES if "debug" not in p.name]  # a debug stack keeps no checkpoints: no bake
OLD_ID, NEW_ID = "i-0aaaaaaaaaaaaaaa1", "i-0bbbbbbbbbbbbbbb2"
OLD_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOLDOLDOLDOLDOLDOLDOLDOLDOLDOLDOLDOLDOLDOLD baker@old"
NEW_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINEWNEWNEWNEWNEWNEWNEWNEWNEWNEWNEWNEWNEWNE user@new"
KEPT = ("cloud", "region", "stack", "experiment", "market", "max_runtime_hours", "deadline_tag", "warn_minutes",
        "final_sync_minutes", "budget_thresholds", "checkpoint_interval_minutes")
"""What the rendered settings give the run; the rest (paths, commands, endpoints) points at the test's root."""


def settings_of(r: Rendering) -> dict[str, Any]:
    """The watchdog's settings as the instance's user-data carries them."""
    (name,) = r.outputs["experiments"]
    inst = r.by_name(f"{name}-instance")
    encoded = inst.inputs.get("userDataBase64") or inst.inputs["userData"]
    return json.loads(files(cloud_config(decode(encoded)))[SETTINGS_PATH]["content"])


def boot(root: Path, rendered: dict[str, Any], instance: str, boot_time: float, minutes: float,
         tags: dict[str, str]) -> tuple[Any, dict[str, Any]]:
    """The watchdog with a stack's settings on ``root`` for ``minutes`` of virtual time after ``boot_time`` + 1 h."""
    kept = {k: rendered[k] for k in KEPT if k in rendered}
    state = MetadataState(cloud=rendered["cloud"], tags=tags, instance_id=instance)
    with MetadataServer(state) as server:
        rig = make_rig(root, metadata_url=server.url, boot_time=boot_time, warn_hook=None, idle_minutes=10_000,
                       ecs_endpoint="http://127.0.0.1:9", deadline_api=rendered.get("deadline_api", False), **kept)
        dog, _ = run_in_process(rig, start=boot_time + HOUR, max_ticks=int(minutes * 60 / 5))
    return dog, rig.settings


def claim(root: Path, cloud: str, boot_time: float, keys: Path) -> Any:
    """The bootstrap's first step on the new instance: claim the state folder, trust only the new key."""
    with MetadataServer(MetadataState(cloud=cloud, instance_id=NEW_ID, values={
            "/latest/meta-data/public-keys/0/openssh-key": NEW_KEY})) as server:
        return instance_setup.claim_state({**instance_setup.DEFAULTS, "cloud": cloud, "metadata_url": server.url,
                                           "state_dir": str(root / "state"), "boot_time": boot_time,
                                           "proc_root": str(root / "proc"), "authorized_keys_path": str(keys)})


@pytest.mark.parametrize("path", BAKEABLE, ids=stack_id)
def test_an_instance_from_the_baked_image_starts_with_nothing_of_the_baking_instance(tmp_path: Path, path: Path) -> None:
    config = load_stack_file(path)
    bake(config)
    baking = render_at(config, stack_id(path), FIXED_NOW)
    later = FIXED_NOW + timedelta(days=10)
    reuse = load_stack_file(path)
    section(reuse)["image"] = {"fromStack": stack_id(path)}
    # Its own run time, not the baker's (a preparation phase has its own: prep.maxRuntimeHours).
    runtime = section(reuse)["prep"] if section(reuse).get("phase") == "prep" else section(reuse)
    runtime["maxRuntimeHours"] = hours = runtime.get("maxRuntimeHours", 8) + 3
    after = render_at(reuse, f"{stack_id(path)}-next", later)
    old, new = settings_of(baking), settings_of(after)
    assert new["stack"] == f"{stack_id(path)}-next" and new["max_runtime_hours"] == hours
    # The render half: the new stack's instance boots the baked image with a deadline, tags and a stack of its own.
    (name,) = after.outputs["experiments"]
    out, first = after.outputs["experiments"][name], baking.outputs["experiments"][name]
    inst = after.by_name(f"{name}-instance")
    baked_id = out["imageFrom"].split(" ", 1)[0]
    assert inst.inputs["ami" if inst.type == "aws:ec2/instance:Instance" else "imageId"] == baked_id
    assert parse_rfc3339(out["deadline"]) - parse_rfc3339(first["deadline"]) == (
        timedelta(days=10) + timedelta(hours=hours - old["max_runtime_hours"]))
    tags = inst.inputs["tags"]
    assert tags[v.TAG_EXPIRES_AT] == out["deadline"] and tags[v.TAG_STACK] == f"{stack_id(path)}-next"
    assert "bakedImage" not in after.outputs and not [x for x in after.resources if x.type in IMAGES]

    # The baking instance: its deadline from its tag, an hour of running, its records and its key on the root.
    baked_boot = FIXED_NOW.timestamp()
    old_deadline = baked_boot + old["max_runtime_hours"] * HOUR
    tags = {v.TAG_EXPIRES_AT: iso(old_deadline), v.TAG_MAX_HOURLY_USD: "10", v.TAG_BUDGET_USD: "100"}
    dog, _ = boot(tmp_path, old, OLD_ID, baked_boot, 6, tags)
    assert dog.deadline == old_deadline
    state_dir = tmp_path / "state"
    assert json.loads((state_dir / "heartbeat.json").read_text())["instanceId"] == OLD_ID
    for record, doc in (("ready.json", {"ready": True, "instanceId": OLD_ID}),
                        ("verify.json", {"passed": True, "instanceId": OLD_ID})):
        (state_dir / record).write_text(json.dumps(doc))
    keys = tmp_path / "authorized_keys"
    keys.write_text(OLD_KEY + "\n")

    # The image's first boot, ten days later, under a new id: the claim, then the watchdog with the NEW stack's
    # settings and no tag that answers.
    new_boot = later.timestamp()
    claimed = claim(tmp_path, new["cloud"], new_boot, keys)
    assert claimed.kind == "first-boot" and claimed.previous_id == OLD_ID
    assert keys.read_text() == NEW_KEY + "\n"
    assert not (state_dir / "ready.json").exists() and not (state_dir / "verify.json").exists()
    spend_tags = {v.TAG_MAX_HOURLY_USD: "10", v.TAG_BUDGET_USD: "100"}  # the deadline tag does not answer
    dog, settings = boot(tmp_path, new, NEW_ID, new_boot, 6, spend_tags)
    assert settings["stack"] == f"{stack_id(path)}-next"
    assert dog.deadline == new_boot + hours * HOUR and "first boot" in dog.deadline_source
    # ... the same run time as the deadline the stack set from its own creation (the tag, once it answers).
    assert parse_rfc3339(out["deadline"]).timestamp() - later.timestamp() == hours * HOUR
    assert dog.deadline > old_deadline + 9 * 24 * HOUR and not dog.done  # the baker's deadline passed long ago
    beat = json.loads((state_dir / "heartbeat.json").read_text())
    assert beat["instanceId"] == NEW_ID
    assert 1.0 <= dog.running_seconds(dog.clock.now()) / HOUR <= 1.15
    assert 1.0 <= beat["spend"]["hours"] <= 1.15, beat["spend"]  # its own hour, not the baker's
    assert beat["spend"]["warned"] == []
    assert not (state_dir / "ready.json").exists() and not (state_dir / "verify.json").exists()
    assert keys.read_text() == NEW_KEY + "\n"
    identity = json.loads((state_dir / "identity.json").read_text())
    assert identity["instanceId"] == NEW_ID and [b["bootTime"] for b in identity["boots"]] == [new_boot]
