"""Stacks the JSON Schema (schema/stack-config.schema.json, Draft 2020-12 via jsonschema) and the loader
(load_stack_spec) judge differently. Each case is one field changed from the fuzz test's valid base."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess

import pytest

import tests.components.spec.test_schema_fuzz as fz
from components.spec.load import SpecError, load_stack_spec
from tests.support.paths import STACKS_DIR

SCHEMA_FILE = fz.SCHEMA
"""The generated schema (test_example_stacks checks schema/stack-config.schema.json is it)."""
CONFIG = fz.load_stack_file(STACKS_DIR / "Pulumi.aws-lora-7b.yaml")
OTHERS = {k: v for k, v in CONFIG.items() if k != fz.KEY}
BASE = fz._merge(CONFIG[fz.KEY], fz.RICH)
SWEEP = fz.load_stack_file(STACKS_DIR / "Pulumi.aws-sweep-lora.yaml")


def _verdicts(config: dict) -> tuple[bool, bool]:
    schema = fz.jsonschema.Draft202012Validator(SCHEMA_FILE, format_checker=fz.FORMATS).is_valid({"config": config})
    try:
        load_stack_spec("atk", config)
        loader = True
    except SpecError:
        loader = False
    return schema, loader


CASES = {
    "cidr-trailing-newline": ("ssh.allowedCidrs", ["203.0.113.7/32\n"]),
    "bucket-trailing-newline": ("checkpoints.bucket", "my-bucket\n"),
    "bucket-double-dot": ("checkpoints.bucket", "my..bucket"),
    "source-uri-bom": ("data.sources", [{"uri": "s3://my-data/raw/\ufeff", "to": "/data/raw", "region": "us-east-1"}]),
    "source-to-trailing-space": ("data.sources", [{"uri": "s3://my-data/raw/", "to": "/data/raw ", "region": "us-east-1"}]),
    "source-to-line-separator": ("data.sources", [{"uri": "s3://my-data/raw/", "to": "/data/raw\u2028", "region": "us-east-1"}]),
    "signal-long-s": ("checkpoints.signal", "\u017fIGUSR1"),
    "signal-dotless-i": ("checkpoints.signal", "s\u0131gusr1"),
    "tag-value-newline": ("tags", {"team": "nlp\n"}),
    "tag-key-aws-prefix": ("tags", {"aws:x": "y"}),
    "tag-key-empty": ("tags", {"": "x"}),
    "tag-value-257": ("tags", {"t": "x" * 257}),
    "idle-minutes-float": ("idleMinutes", 30.0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_field_case_same_verdict(name: str) -> None:
    path, value = CASES[name]
    spec = fz._with(BASE, tuple(path.split(".")), value)
    schema, loader = _verdicts({**OTHERS, fz.KEY: spec})
    assert schema == loader, f"{path}={value!r}: schema {schema}, loader {loader}"
    # Each is refused by both, but a whole-number float: 30.0 is the integer 30 (docs/config.md, Strict types).
    assert loader is (name in ACCEPTED), f"{path}={value!r}: loader {loader}"


ACCEPTED = {"idle-minutes-float"}


@pytest.mark.parametrize("region", ["cn-hangzhou", "us-east-1\n"])
def test_provider_region_key_same_verdict(region: str) -> None:
    schema, loader = _verdicts({**OTHERS, "aws:region": region, fz.KEY: BASE})
    assert schema == loader, f"aws:region={region!r}: schema {schema}, loader {loader}"


@pytest.mark.parametrize("run", [{"name": "R8"}, {"name": ""}, {"name": "r 8"}, {"name": "r8", "overrides": {"bogus": 1}},
                                 {"name": "r8", "overrides": {"idleMinutes": 1}}])
def test_sweep_run_same_verdict(run: dict) -> None:
    sweep = copy.deepcopy(SWEEP)
    sweep["gpulease:sweep"]["runs"][0] = {**sweep["gpulease:sweep"]["runs"][0], **run}
    schema, loader = _verdicts(sweep)
    assert schema == loader, f"run {run!r}: schema {schema}, loader {loader}"


def test_loader_refuses_non_ascii_account_id() -> None:
    # Python's \d takes Arabic-Indic digits; IAM (and an ECMA-262 validator) do not.
    spec = fz._with(BASE, ("iam", "permissionsBoundary"), "arn:aws:iam::\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669\u0660\u0661\u0662:policy/x")
    with pytest.raises(SpecError):
        load_stack_spec("atk", {**OTHERS, fz.KEY: spec})


def test_every_pattern_is_valid_ecma_unicode() -> None:
    # ajv / vscode-json-languageservice compile patterns with the 'u' flag, where "\-" outside a class is an error.
    patterns: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "pattern" and isinstance(v, str):
                    patterns.append(v)
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(SCHEMA_FILE)
    # An identity escape of a non-syntax character outside a class is a SyntaxError under /u.
    bad = [p for p in patterns if re.search(r"(?<!\\)(?:\\\\)*\\-", re.sub(r"\[(?:\\.|[^\]\\])*\]", "", p))]
    assert not bad, bad


def test_cluster_port_collision_is_a_cross_field_rule() -> None:
    # A schema cannot compare two values: the loader alone refuses the collision, and the fuzz excuses it by name.
    cluster = fz.load_stack_file(STACKS_DIR / "Pulumi.aws-cluster-4x8.yaml")
    cluster[fz.KEY] = fz._with(cluster[fz.KEY], ("cluster",), {"rendezvousPort": 29400, "noticePort": 29400})
    assert _verdicts(cluster) == (True, False)
    assert ("cluster.noticePort", repr(29500)) in fz.CROSS_FIELD and ("cluster.rendezvousPort", repr(29400)) in fz.CROSS_FIELD


def _patterns(node: object) -> list[str]:
    if isinstance(node, dict):
        return [*([node["pattern"]] if isinstance(node.get("pattern"), str) else []),
                *(p for v in node.values() for p in _patterns(v))]
    if isinstance(node, list):
        return [p for v in node for p in _patterns(v)]
    return []


NODE = shutil.which("node") or "node"


def test_every_pattern_compiles_in_node_with_the_u_flag() -> None:
    # An editor's validator (ajv, vscode-json-languageservice) compiles each pattern as new RegExp(p, "u").
    script = ("const ps = JSON.parse(require('fs').readFileSync(0, 'utf8')); const bad = [];"
              "for (const p of ps) { try { new RegExp(p, 'u'); } catch (e) { bad.push(p.slice(0, 80) + ': ' + e.message); } }"
              "process.stdout.write(JSON.stringify(bad));")
    patterns = sorted(set(_patterns(SCHEMA_FILE)))
    assert len(patterns) > 30
    out = subprocess.run([NODE, "-e", script], input=json.dumps(patterns), capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
