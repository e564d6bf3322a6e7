"""The preconditions table in ``gpulease plan`` for any program (``api-preconditions``: mandatory where a failure
leaves paid resources half-deployed, advisory otherwise), the baked image's create timeout (one bound with the
snapshot's), and the GPU vCPU row on a kit stack that adds compute of its own."""

from __future__ import annotations

import dataclasses
import json

from components import image_bake
from gpulease.core import bake_timeouts
from gpulease.review import engine
from gpulease.review import preconditions as pc
from tests.review.example_renders import STACKS, example
from tests.support.paths import ROOT

PROGRAM = ROOT / "tests" / "policies" / "programs" / "aws-eip-efa-instance"
ALI_LORA = next(p for p in STACKS if p.name == "Pulumi.ali-lora-7b.yaml")
AWS_LORA = next(p for p in STACKS if p.name == "Pulumi.aws-lora-7b.yaml")


def _findings(stack: dict) -> list[tuple[str, str]]:
    return [(v["level"], v["message"]) for v in stack["violations"] if v["policy"] == "api-preconditions"]


def test_a_foreign_program_with_an_eip_through_an_efa_instance_fails_the_plan_in_every_format(capsys) -> None:
    from gpulease.cli import main

    assert main(["plan", str(PROGRAM), "--format", "json"]) == 1
    (stack,) = json.loads(capsys.readouterr().out)["stacks"]
    found = _findings(stack)
    assert [level for level, _ in found] == ["mandatory", "mandatory", "advisory", "advisory"]
    assert "eip-through-interface: rank0-address: associated through instance rank0, which has 2 network interfaces " \
           "(AWS answers InvalidInstanceID)" in found[0][1]
    assert "eip-on-primary-interface: rank1: 2 network interfaces and no Elastic IP on its primary interface" \
           in found[3][1]
    assert main(["plan", str(PROGRAM)]) == 1
    text = capsys.readouterr().out
    assert "api-preconditions" in text and "eip-through-interface: rank0-address" in text
    assert main(["plan", str(PROGRAM), "--format", "markdown"]) == 1
    markdown = capsys.readouterr().out
    assert "`api-preconditions`" in markdown and "eip-through-interface: rank1-address" in markdown


def test_every_violated_row_is_a_finding_with_its_level() -> None:
    r = example(ALI_LORA, bake=True)
    (image,) = r.of_type(pc.ALI_IMAGE)
    resources = [dataclasses.replace(x, custom_timeouts={}) if x is image else x for x in r.resources]
    found = engine.precondition_findings(dataclasses.replace(r, resources=resources))
    assert [(v.policy, v.level, v.stage) for v in found] == [("api-preconditions", "advisory", "offline")]
    assert found[0].detail.startswith(f"image-create-timeout: {image.name}: waits the default 10m for an image from "
                                      "the snapshot of a")


def test_the_baked_alibaba_image_waits_the_snapshots_bound() -> None:
    r = example(ALI_LORA, bake=True)
    (image,) = r.of_type(pc.ALI_IMAGE)
    (snap,) = r.of_type(pc.ALI_SNAPSHOT)
    root = int(max(x.inputs["systemDiskSize"] for x in r.of_type("alicloud:ecs/instance:Instance")))
    assert image.custom_timeouts == snap.custom_timeouts == {"create": f"{30 + root}m"}
    assert pc.violations(r) == []


def test_one_bound_for_the_program_and_the_table() -> None:
    assert image_bake.snapshot_create_timeout(200) == bake_timeouts.create_timeout(200) == "230m"
    assert bake_timeouts.create_minutes(100_000) == 12 * 60
    assert not hasattr(pc, "SNAPSHOT_BASE_MINUTES") and not hasattr(image_bake, "SNAPSHOT_BASE_MINUTES")


def test_the_gpu_vcpu_row_is_said_for_the_kits_stacks_only() -> None:
    r = example(AWS_LORA)
    assert [row for row, _ in pc.advisories(r)].count("gpu-vcpus") == 1
    foreign = dataclasses.replace(r, resources=[x for x in r.resources if not x.type.startswith("gpulease:")])
    assert "gpu-vcpus" not in dict(pc.advisories(foreign))  # another program's partial sum is not said


def test_a_kit_stack_with_its_own_fleet_is_told_at_least_and_what_was_not_counted() -> None:
    r = example(AWS_LORA)
    base = next(x for x in r.resources if x.custom)
    fleet = dataclasses.replace(base, type="aws:ec2/fleet:Fleet", name="extra-fleet", inputs={}, outputs={},
                                id="fleet-1", urn="urn:pulumi:s::p::aws:ec2/fleet:Fleet::extra-fleet")
    found = [line for row, line in pc.advisories(dataclasses.replace(r, resources=[*r.resources, fleet]))
             if row == "gpu-vcpus"]
    (plain,) = [line for row, line in pc.advisories(r) if row == "gpu-vcpus"]
    assert found == [f"at least {plain}", "not counted in any GPU vCPU quota above: EC2 Fleet extra-fleet; their GPU "
                     "instances count against the same quotas"]
