"""The Alibaba Cloud example stacks render offline and `gpulease plan` reviews them."""

from __future__ import annotations

import json

import pytest

from gpulease.cli import main
from gpulease.core import vocabulary as v
from gpulease.review.render import render_stack_file
from tests.support.alicloud import INSTANCE
from tests.support.clock import FIXED_NOW
from tests.support.paths import STACKS_DIR

# stack -> (region, instance type, market, hours, checkpoints)
EXAMPLES = {
    "ali-lora-7b": ("cn-hangzhou", "ecs.gn7i-c8g1.2xlarge", "spot", 8, True),
    "ali-full-7b": ("ap-southeast-1", "ecs.gn7e-c16g1.4xlarge", "spot", 24, True),
    "ali-debug-t4": ("cn-hangzhou", "ecs.gn6i-c4g1.xlarge", "on-demand", 2, False),
}


@pytest.mark.parametrize("stack", sorted(EXAMPLES))
def test_example_stack_renders(stack: str) -> None:
    region, itype, market, hours, checkpoints = EXAMPLES[stack]
    path = STACKS_DIR / f"Pulumi.{stack}.yaml"
    assert path.read_text().splitlines()[0] == "# yaml-language-server: $schema=../schema/stack-config.schema.json"
    r = render_stack_file(path, now=FIXED_NOW)
    assert r.error is None, r.error
    instance = r.one(INSTANCE).inputs
    assert instance["instanceType"] == itype
    assert instance["spotStrategy"] == ("SpotAsPriceGo" if market == "spot" else "NoSpot")
    assert instance["autoReleaseTime"] == f"2026-12-{1 + (8 + hours) // 24:02d}T{(8 + hours) % 24:02d}:00:00Z"
    assert r.outputs["availabilityZone"].startswith(region)
    assert r.outputs["checkpointUri"].startswith("oss://") == checkpoints
    assert r.outputs["market"] == market


def test_debug_box_has_no_inbound_port_and_states_its_reason() -> None:
    r = render_stack_file(STACKS_DIR / "Pulumi.ali-debug-t4.yaml", now=FIXED_NOW)
    assert [x for x in r.of_type("alicloud:ecs/securityGroupRule:SecurityGroupRule") if x.inputs["type"] == "ingress"] == []
    assert r.one(INSTANCE).inputs["tags"][v.TAG_ON_DEMAND_REASON].startswith("interactive debugging")


def test_plan_command_reviews_an_alibaba_stack(capsys) -> None:
    assert main(["plan", "ali-lora-7b", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (report,) = data["stacks"] if isinstance(data, dict) else data
    assert report["error"] is None
    # The policy pack reads Alibaba Cloud resources with the same tag vocabulary: nothing mandatory fails.
    assert report.get("status", "pass") == "pass", report.get("violations")
    types = {r["type"] for r in report["resources"]}
    assert {"alicloud:ecs/instance:Instance", "alicloud:oss/bucket:Bucket", "alicloud:ecs/ecsDisk:EcsDisk"} <= types
    assert report["outputs"]["instanceType"] == "ecs.gn7i-c8g1.2xlarge"
