"""Replacement rehearsal: every example stack rendered before and after each change a user will make, the diff
classified with the providers' replace-trigger table (gpulease/review/replacement.py).

What must hold whatever the change: data disks and buckets are never replaced or deleted; an instance is only
ever replaced delete-before-replace, together with its disk attachment; the deadline enforcement (EventBridge
schedule on AWS, ``autoReleaseTime`` on Alibaba Cloud) targets the live instance at the current deadline.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pulumi
import pytest

from components.alicloud.lifetime import release_time
from components.aws.lifetime import at_expression
from gpulease.review.mocks import CloudMocks
from gpulease.review.render import Rendering, load_stack_file, render
from gpulease.review.replacement import Change, classify, replaced, summary
from tests.support.clock import FIXED_NOW
from tests.support.paths import STACKS_DIR

STACKS = sorted(STACKS_DIR.glob("Pulumi.*.yaml"))
LATER = FIXED_NOW + timedelta(hours=1)

INSTANCES = {"aws:ec2/instance:Instance", "alicloud:ecs/instance:Instance"}
ATTACHMENTS = {"aws:ec2/volumeAttachment:VolumeAttachment", "alicloud:ecs/ecsDiskAttachment:EcsDiskAttachment"}
KEPT = {"aws:ebs/volume:Volume", "alicloud:ecs/ecsDisk:EcsDisk", "aws:s3/bucket:Bucket", "alicloud:oss/bucket:Bucket"}
SCHEDULE = "aws:scheduler/schedule:Schedule"
TERMINATE = "arn:aws:scheduler:::aws-sdk:ec2:terminateInstances"
CANCEL = "arn:aws:scheduler:::aws-sdk:ec2:cancelSpotInstanceRequests"
SPOT_REQUEST_PARTS = {SCHEDULE, "aws:ec2/tag:Tag", "aws:iam/rolePolicy:RolePolicy"}


class NewerImages(CloudMocks):
    """The clouds a month later: every image lookup answers with a newer image of the same family."""

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict:
        result = super().call(args)
        if args.token == "aws:ec2/getAmi:getAmi":
            result = {**result, "id": result["id"] + "n", "imageId": result["id"] + "n", "name": "newer"}
        if args.token == "alicloud:ecs/getImages:getImages":
            newer = "ubuntu_22_04_x64_20G_alibase_20261201.vhd"
            result = {**result, "ids": [newer], "images": [{**result["images"][0], "id": newer, "imageId": newer}]}
        return result


def stack_id(path: Path) -> str:
    return path.name.removeprefix("Pulumi.").removesuffix(".yaml")


def cloud_of(config: dict[str, Any]) -> str:
    return "alicloud" if "alicloud:region" in config else "aws"


def section(config: dict[str, Any]) -> dict[str, Any]:
    """The experiment, or a sweep's base: where a user edits what every run shares."""
    return config["gpulease:experiment"] if "gpulease:experiment" in config else config["gpulease:sweep"]["base"]


def render_at(config: dict[str, Any], stack: str, now, *, prior: Rendering | None = None, mocks: CloudMocks | None = None) -> Rendering:
    region = config.get("aws:region") or config.get("alicloud:region")
    r = render(config, stack=stack, now=now, prior=prior, mocks=mocks or CloudMocks(region=region, now=now))
    assert r.error is None, r.error
    return r


# --- the changes a user makes --------------------------------------------------------------------------------


def renew(config: dict[str, Any]) -> None:
    section(config)["deadlineRenewal"] = section(config).get("deadlineRenewal", 0) + 1


def edit_hook(config: dict[str, Any]) -> None:
    spec = section(config)
    if spec.get("checkpoints", {}).get("enabled", True):
        spec.setdefault("checkpoints", {})["hook"] = "pkill -USR2 -f train.py"
    else:
        spec.setdefault("watchdog", {})["warnHook"] = "wall 'gpulease: deadline in 15 minutes'"


def grow_disk(config: dict[str, Any]) -> None:
    disk = section(config).setdefault("dataDisk", {})
    disk["sizeGb"] = disk.get("sizeGb", 100) + 100


def pin_image(image_id: str) -> Callable[[dict[str, Any]], None]:
    def change(config: dict[str, Any]) -> None:
        section(config)["image"] = {"id": image_id}

    return change


def pinned(config: dict[str, Any], which: str) -> dict[str, Any]:
    ids = {"aws": ("ami-0123456789abcdef0", "ami-0fedcba9876543210"),
           "alicloud": ("ubuntu_22_04_x64_20G_alibase_20261101.vhd", "ubuntu_22_04_x64_20G_alibase_20270101.vhd")}
    config = copy.deepcopy(config)
    pin_image(ids[cloud_of(config)][0 if which == "old" else 1])(config)
    return config


@functools.cache
def created(path: Path) -> Rendering:
    """The stack file as created, rendered once per worker: most rehearsals start from it, and a rendering is only
    read afterwards (``render`` reads ``prior``; ``classify`` reads both sides)."""
    return render_at(load_stack_file(path), stack_id(path), FIXED_NOW)


def rehearse(path: Path, change: Callable[[dict[str, Any]], None] | None = None, *, newer_images: bool = False,
             start: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> tuple[Rendering, Rendering, dict[str, Change]]:
    """Render the stack as created (``start`` edits it first), then the update after ``change`` an hour later;
    classify the diff."""
    if start is None:
        before = created(path)
        config = copy.deepcopy(before.config)
    else:
        config = start(load_stack_file(path))
        before = render_at(config, stack_id(path), FIXED_NOW)
    changed = copy.deepcopy(config)
    if change:
        change(changed)
    region = changed.get("aws:region") or changed.get("alicloud:region")
    mocks = NewerImages(region=region, now=LATER) if newer_images else None
    after = render_at(changed, stack_id(path), LATER, prior=before, mocks=mocks)
    return before, after, classify(before, after)


# --- what must hold whatever the change ----------------------------------------------------------------------


def by_type(r: Rendering, types: set[str]):
    return [x for x in r.resources if x.type in types]


def attachment_of(r: Rendering, instance_urn: str):
    found = [a for a in by_type(r, ATTACHMENTS) if instance_urn in a.property_dependencies.get("instanceId", [])]
    assert len(found) == 1, f"expected one disk attachment of {instance_urn}, found {len(found)}"
    return found[0]


def assert_nothing_lost(changes: dict[str, Change]) -> None:
    lost = [c for c in changes.values() if c.type in KEPT and c.action in ("replace", "delete")]
    assert not lost, "\n".join(summary(changes))


def assert_instance_replacements_are_safe(after: Rendering, changes: dict[str, Change]) -> None:
    for inst in replaced(changes):
        if inst.type not in INSTANCES:
            continue
        assert inst.delete_before_replace, f"{inst.name} would be replaced create-before-delete"
        attachment = changes[attachment_of(after, inst.urn).urn]
        assert attachment.action == "replace" and attachment.delete_before_replace, (
            f"{inst.name} is replaced but its disk attachment is {attachment.action} "
            f"(delete before replace: {attachment.delete_before_replace})"
        )


def experiment_instances(after: Rendering, name: str, out: dict[str, Any]):
    """An experiment's instance, or a cluster's nodes in rank order (``<name>-node<rank>-instance``)."""
    if "nodes" in out:
        return [after.by_name(f"{name}-node{node['rank']}-instance") for node in out["nodes"]]
    return [after.by_name(f"{name}-instance")]


def assert_deadline_targets_the_live_instance(after: Rendering, changes: dict[str, Change]) -> None:
    """One deadline for every instance of an experiment: on AWS one schedule per instance terminating that one (a
    cluster's nodes each: one TerminateInstances call with a gone id fails for all), on Alibaba Cloud the same
    release time on each."""
    for name, out in after.outputs["experiments"].items():
        insts = experiment_instances(after, name, out)
        assert out["instanceId"] == insts[0].id
        if insts[0].type == "aws:ec2/instance:Instance":
            for inst in insts:
                schedules = [s for s in after.of_type(SCHEDULE) if inst.urn in s.property_dependencies.get("target", [])
                             and s.inputs["target"]["arn"] == TERMINATE]
                assert len(schedules) == 1, f"{inst.name}: {len(schedules)} schedules target it"
                schedule = schedules[0]
                assert json.loads(schedule.inputs["target"]["input"]) == {"InstanceIds": [inst.id]}
                assert schedule.inputs["scheduleExpression"] == at_expression(out["deadline"])
                assert changes[schedule.urn].action in ("same", "update")
                if changes[inst.urn].action == "replace":
                    assert changes[schedule.urn].action == "update", "the schedule must follow the new instance"
        else:
            for inst in insts:
                assert inst.inputs["autoReleaseTime"] == release_time(out["deadline"])


def assert_safe(after: Rendering, changes: dict[str, Change]) -> None:
    assert_nothing_lost(changes)
    assert_instance_replacements_are_safe(after, changes)
    assert_deadline_targets_the_live_instance(after, changes)


def instance_changes(changes: dict[str, Change]) -> list[Change]:
    return [c for c in changes.values() if c.type in INSTANCES]


# --- the rehearsal, per example stack ------------------------------------------------------------------------


@pytest.mark.parametrize("path", STACKS, ids=stack_id)
def test_deadline_renewal(path: Path) -> None:
    before, after, changes = rehearse(path, renew)
    assert_safe(after, changes)
    for name, out in after.outputs["experiments"].items():
        assert out["deadline"] > before.outputs["experiments"][name]["deadline"], "the renewal moved no deadline"
    if cloud_of(after.config) == "alicloud":
        # The release time moves in place; the instance keeps running.
        for inst in instance_changes(changes):
            assert inst.action == "update" and "autoReleaseTime" in inst.changed, summary(changes)


@pytest.mark.parametrize("path", STACKS, ids=stack_id)
def test_renewal_leaves_user_data_unchanged(path: Path) -> None:
    _, _, changes = rehearse(path, renew)
    for inst in instance_changes(changes):
        assert not [p for p in inst.changed if p.startswith("userData")], summary(changes)
        assert inst.action != "replace", summary(changes)


@pytest.mark.parametrize("path", STACKS, ids=stack_id)
def test_newer_image_published_changes_nothing(path: Path) -> None:
    before, _, changes = rehearse(path, newer_images=True)
    # The lookup did find a newer image: without the recorded one the instance would be touched.
    fresh = render_at(copy.deepcopy(before.config), stack_id(path), LATER,
                      mocks=NewerImages(region=before.config.get("aws:region") or before.config.get("alicloud:region")))
    image_key = "ami" if cloud_of(before.config) == "aws" else "imageId"
    assert {i.inputs[image_key] for i in by_type(fresh, INSTANCES)}.isdisjoint(
        {i.inputs[image_key] for i in by_type(before, INSTANCES)}
    )
    assert [c for c in changes.values() if c.action != "same"] == [], summary(changes)


@pytest.mark.parametrize("path", STACKS, ids=stack_id)
def test_pinned_image_change_replaces_the_instance_on_purpose(path: Path) -> None:
    _, after, changes = rehearse(path, lambda c: c.update(pinned(c, "new")), start=lambda c: pinned(c, "old"))
    assert_safe(after, changes)
    instances = instance_changes(changes)
    assert instances and all(i.action == "replace" for i in instances), summary(changes)


@pytest.mark.parametrize("path", STACKS, ids=stack_id)
def test_hook_edited(path: Path) -> None:
    _, after, changes = rehearse(path, edit_hook)
    assert_safe(after, changes)
    for inst in instance_changes(changes):
        if inst.type == "aws:ec2/instance:Instance":
            # A one-time spot instance cannot be stopped to take new user-data: it is replaced, safely.
            assert inst.action == "replace" and inst.triggers == ["userDataBase64"], summary(changes)
        else:
            assert inst.action == "update" and "userData: reboots the instance" in inst.notes, summary(changes)


@pytest.mark.parametrize("path", STACKS, ids=stack_id)
def test_disk_grown_in_place(path: Path) -> None:
    _, after, changes = rehearse(path, grow_disk)
    assert_safe(after, changes)
    moved = [c for c in changes.values() if c.action != "same"]
    assert moved and all(c.type in KEPT and c.action == "update" and c.changed == ["size"] for c in moved), summary(changes)


# --- spot recovery turned off and on a running stack ----------------------------------------------------------


def recovers(config: dict[str, Any]) -> bool:
    spec = section(config)
    return (cloud_of(config) == "aws" and spec.get("market", "spot") == "spot" and spec.get("nodes", 1) == 1
            and spec.get("phase", "train") == "train")


def set_recover(value: bool) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    def change(config: dict[str, Any]) -> dict[str, Any]:
        section(config).setdefault("spot", {})["recover"] = value
        return config

    return change


RECOVERING = [p for p in STACKS if recovers(load_stack_file(p))]
PERSISTENT = {"instanceInterruptionBehavior": "stop", "spotInstanceType": "persistent"}
"""A recovering instance's spot options: no ``validUntil``, on every path (created, renewed, replaced, turned on)."""


def request_parts(r: Rendering) -> set[str]:
    """The names of what only a persistent request has: its cancelling schedule, its tags, the watchdog's policy."""
    return {x.name for x in r.resources if x.type in SPOT_REQUEST_PARTS
            and (x.name.endswith(("-spot-cancel", "-cancel-own-spot-request")) or "-spot-request-" in x.name)}


@pytest.mark.parametrize("path", RECOVERING, ids=stack_id)
@pytest.mark.parametrize("on", [False, True], ids=["turned-off", "turned-on"])
def test_turning_recovery_off_or_on_replaces_the_instance_and_keeps_the_disk(path: Path, on: bool) -> None:
    """instanceMarketOptions is ForceNew: the instance is replaced delete-before-replace (its request cancelled by
    the provider first), never two at once; the data disk and the bucket stay; the schedules follow the new one."""
    before, after, changes = rehearse(path, set_recover(on), start=set_recover(not on))
    assert_safe(after, changes)
    instances = instance_changes(changes)
    assert instances, summary(changes)
    for inst in instances:
        assert inst.action == "replace" and inst.delete_before_replace, summary(changes)
        assert [t for t in inst.triggers if t.startswith("instanceMarketOptions.spotOptions.")], summary(changes)
        assert any(n.startswith("instanceMarketOptions: the old instance's spot request is cancelled and the instance "
                                "terminated before the new one is launched") for n in inst.notes), summary(changes)
    kept = [c for c in changes.values() if c.type in KEPT]
    assert kept and all(c.action in ("same", "update") for c in kept), summary(changes)
    gained, lost = request_parts(after) - request_parts(before), request_parts(before) - request_parts(after)
    names = [n for n in after.outputs["experiments"]]
    expected = {f"{n}-{part}" for n in names for part in ("spot-cancel", "cancel-own-spot-request")} | {
        f"{n}-spot-request-{key}" for n in names for key in ("managed-by", "stack", "experiment", "expires-at")}
    assert (gained, lost) == ((expected, set()) if on else (set(), expected)), summary(changes)
    for name in names:
        cancels = [s for s in after.of_type(SCHEDULE) if s.inputs["target"]["arn"] == CANCEL]
        assert bool([s for s in cancels if s.name == f"{name}-spot-cancel"]) is on


@pytest.mark.parametrize("path", RECOVERING, ids=stack_id)
def test_a_renewal_moves_the_cancel_schedule_and_never_replaces_a_recovering_instance(path: Path) -> None:
    _, after, changes = rehearse(path, renew)
    for name, out in after.outputs["experiments"].items():
        (cancel,) = [s for s in after.of_type(SCHEDULE) if s.name == f"{name}-spot-cancel"]
        assert cancel.inputs["scheduleExpression"] == at_expression(out["deadline"], timedelta(minutes=2))
        assert changes[cancel.urn].action == "update"
        inst = after.by_name(f"{name}-instance")
        assert changes[inst.urn].action in ("same", "update"), summary(changes)
        # The request holds no end of its own (a stale one would outlive a renewal or cut it short).
        assert inst.inputs["instanceMarketOptions"]["spotOptions"] == PERSISTENT, summary(changes)
        tag = after.by_name(f"{name}-spot-request-expires-at")
        assert tag.inputs["value"] == out["deadline"] and changes[tag.urn].action == "update", summary(changes)


def assert_request_ends_at_the_current_deadline(after: Rendering, changes: dict[str, Change]) -> None:
    """Each recovering instance, whatever happened to it, holds no end of its own, and its request is cancelled two
    minutes before the deadline now in force."""
    for name, out in after.outputs["experiments"].items():
        inst = after.by_name(f"{name}-instance")
        assert inst.inputs["instanceMarketOptions"]["spotOptions"] == PERSISTENT, summary(changes)
        (cancel,) = [s for s in after.of_type(SCHEDULE) if s.name == f"{name}-spot-cancel"]
        assert cancel.inputs["scheduleExpression"] == at_expression(out["deadline"], timedelta(minutes=2))


@pytest.mark.parametrize("path", RECOVERING, ids=stack_id)
def test_a_replacement_after_a_renewal_ends_its_request_at_the_renewed_deadline(path: Path) -> None:
    """A renewal and a hook edit together replace the instance: the new request must end at the renewed deadline,
    not at the first one (which a replacement inherits when the end is ignored)."""
    def both(config: dict[str, Any]) -> None:
        renew(config)
        edit_hook(config)

    before, after, changes = rehearse(path, both)
    for name, out in after.outputs["experiments"].items():
        inst = after.by_name(f"{name}-instance")
        assert changes[inst.urn].action == "replace", summary(changes)
        assert out["deadline"] > before.outputs["experiments"][name]["deadline"]
    assert_request_ends_at_the_current_deadline(after, changes)


@pytest.mark.parametrize("path", RECOVERING, ids=stack_id)
def test_recovery_turned_on_ends_its_request_at_the_deadline(path: Path) -> None:
    """Turning recovery on from off creates the persistent request with the cancelling schedule at the deadline."""
    _, after, changes = rehearse(path, set_recover(True), start=set_recover(False))
    assert_request_ends_at_the_current_deadline(after, changes)
