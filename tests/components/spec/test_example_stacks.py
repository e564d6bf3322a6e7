"""Every example stack validates against the checked-in schema and renders under mocks."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import jsonschema
import pytest
import yaml

from components.spec.load import load_stack_spec
from gpulease.cli.schema import SCHEMA_PATH, schema_text
from gpulease.review.render import load_stack_file, render_stack_file
from tests.support.clock import FIXED_NOW
from tests.support.paths import ROOT, STACKS_DIR

STACK_FILES = sorted(STACKS_DIR.glob("Pulumi.*.yaml"))


def test_there_are_example_stacks_for_each_scenario() -> None:
    names = {p.name for p in STACK_FILES}
    assert {"Pulumi.aws-lora-7b.yaml", "Pulumi.aws-full-7b.yaml", "Pulumi.aws-debug-t4.yaml", "Pulumi.aws-sweep-lora.yaml"} <= names


def test_checked_in_schema_is_current() -> None:
    assert SCHEMA_PATH.read_text() == schema_text(), "schema/stack-config.schema.json is stale: run `make schema`"


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.name)
def test_stack_file_matches_schema_and_spec(path) -> None:
    text = path.read_text()
    assert text.startswith("# yaml-language-server: $schema=../schema/stack-config.schema.json")
    jsonschema.validate(yaml.safe_load(text), json.loads(SCHEMA_PATH.read_text()))
    load_stack_spec(path.stem.removeprefix("Pulumi."), load_stack_file(path))


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.name)
def test_stack_renders_under_mocks(path) -> None:
    rendering = render_stack_file(path, now=FIXED_NOW)
    assert rendering.error is None, rendering.error
    instances = [r for r in rendering.resources if r.type in ("aws:ec2/instance:Instance", "alicloud:ecs/instance:Instance")]
    assert instances, "a stack declares at least one GPU instance"
    # A cluster's nodes are named <experiment>-node<rank>-instance.
    assert set(rendering.outputs["experiments"]) == {
        re.sub(r"-node\d+$", "", r.name.removesuffix("-instance")) for r in instances
    }


def test_schema_rejects_what_the_spec_rejects() -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    doc = yaml.safe_load((STACKS_DIR / "Pulumi.aws-lora-7b.yaml").read_text())
    doc["config"]["gpulease:experiment"]["market"] = "reserved"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema)


def test_plan_command_offline_json() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "gpulease", "plan", "aws-lora-7b", "--format", "json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},  # no credentials, no Pulumi CLI on PATH
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    stacks = doc if isinstance(doc, list) else doc.get("stacks", [doc])
    types = {r["type"] for s in stacks for r in s["resources"]}
    assert "aws:ec2/instance:Instance" in types and "aws:scheduler/schedule:Schedule" in types


def test_plan_reports_bad_input_with_exit_code_2(tmp_path) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: gpulease\nruntime: python\nstackConfigDir: stacks\n")
    (tmp_path / "__main__.py").write_text("from components.program import main\n\nmain()\n")
    bad = yaml.safe_load((STACKS_DIR / "Pulumi.aws-lora-7b.yaml").read_text())
    bad["config"]["gpulease:experiment"]["ssh"]["allowedCidrs"] = ["0.0.0.0/0"]
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.bad.yaml").write_text(yaml.safe_dump(bad))
    proc = subprocess.run(
        [sys.executable, "-m", "gpulease", "plan", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "gpulease:experiment.ssh.allowedCidrs" in proc.stdout + proc.stderr
