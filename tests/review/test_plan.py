"""``gpulease plan``: verdicts, formats, exit codes, policy config, several stacks, any Pulumi project."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpulease.cli import main
from gpulease.review.engine import StackReview
from gpulease.review.render import CapturedResource, Rendering
from gpulease.review.report import COMMENT_MARKER, MERMAID_MAX_NODES, mermaid
from tests.support.paths import ROOT
from tests.support.policy import HANDWRITTEN

# The hand-written program: an SG open to the world on 22, an untagged on-demand GPU instance, an unencrypted
# volume and a public bucket. Exactly these findings, no more, no fewer; and, the shipped catalog being older than
# 30 days today, the stale-price advisory.
HANDWRITTEN_FINDINGS = sorted(
    [
        ("budget-tags", "mandatory", "train-sg"),
        ("budget-tags", "mandatory", "train-box"),
        ("budget-tags", "mandatory", "train-data"),
        ("budget-tags", "mandatory", "train-results"),
        ("ssh-ingress-restricted", "mandatory", "train-sg"),
        ("max-runtime", "mandatory", "train-box"),
        ("max-runtime-cloud-stop", "mandatory", "train-box"),
        ("spot-only-with-checkpointing", "mandatory", "train-box"),
        ("encrypted-storage", "mandatory", "train-box"),
        ("encrypted-storage", "mandatory", "train-data"),
        ("data-disk-retained", "mandatory", "train-data"),
        ("bucket-public-access-blocked", "mandatory", "train-results"),
        ("bucket-public-access-blocked", "mandatory", "train-results"),
        ("bucket-lifecycle-required", "advisory", "train-results"),
        ("budget-prices-fresh", "advisory", None),
    ]
)


def plan_json(capsys, *args: str) -> tuple[int, dict]:
    code = main(["plan", *args, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_example_stack_is_clean_with_cost(capsys):
    code, report = plan_json(capsys, "aws-lora-7b")
    assert code == 0 and report["exitCode"] == 0
    (stack,) = report["stacks"]
    assert (stack["project"], stack["stack"], stack["status"]) == ("gpulease", "aws-lora-7b", "pass")
    # The findings: the shipped catalog's prices are older than 30 days, and the GPU vCPU quota the stack needs
    # (advisories, so the exit code stays 0).
    assert [(x["policy"], x["level"], x["resourceName"]) for x in stack["violations"]] == [
        ("budget-prices-fresh", "advisory", None), ("quota-gpu-vcpus", "advisory", None)]
    assert "2025-06-01" in stack["violations"][0]["message"] and "gpulease catalog refresh" in stack["violations"][0]["message"]
    assert stack["cost"]["pricesAsOf"] == "2025-06-01"
    assert stack["cost"]["priceCatalog"] == "shipped catalog of 2025-06-01"
    assert stack["policyLevels"]["ssh-ingress-restricted"] == "mandatory"
    assert 0 < stack["cost"]["worstCaseUsd"] < 40  # the stack's budget tag
    types = {r["type"] for r in stack["resources"]}
    assert {"aws:ec2/instance:Instance", "aws:scheduler/schedule:Schedule", "aws:ebs/volume:Volume"} <= types
    volume = next(r for r in stack["resources"] if r["type"] == "aws:ebs/volume:Volume")
    assert volume["options"]["retainOnDelete"] is True


def test_replacement_options_are_in_the_json_and_the_tables(capsys, tmp_path):
    """A reviewer sees what a change would replace, and in which order, without reading the program."""
    _, report = plan_json(capsys, "aws-lora-7b", "ali-lora-7b")
    for stack, image in zip(report["stacks"], ("ami", "imageId"), strict=True):
        by_type = {r["type"].split(":")[-1]: r["options"] for r in stack["resources"]}
        instance = by_type["Instance"]
        assert instance["deleteBeforeReplace"] is True and instance["ignoreChanges"] == [image]
        assert instance["replaceOnChanges"] == ([] if image == "ami" else ["imageId", "spotInterruptionBehavior"])
        attachment = by_type["VolumeAttachment" if image == "ami" else "EcsDiskAttachment"]
        assert attachment["deleteBeforeReplace"] is True
        assert by_type["Bucket"]["deleteBeforeReplace"] is False and by_type["Bucket"]["replaceOnChanges"] == []
    main(["plan", "ali-lora-7b", "--format", "markdown"])
    rows = {line.split("|")[2].strip(): line.split("|")[4].strip() for line in capsys.readouterr().out.splitlines()
            if line.startswith("| `") and line.count("|") == 6}
    assert rows["llama7b-lora-instance"] == ("delete-before-replace; replace on: spotInterruptionBehavior; ignore: imageId "
                                             "(so no replacement on a new value)")
    assert rows["llama7b-lora-data-attachment"] == "delete-before-replace"
    assert rows["llama7b-lora-data"] == ""
    out = tmp_path / "plan.txt"
    main(["plan", "aws-lora-7b", "--output", str(out)])
    lines = out.read_text().splitlines()
    (at,) = [i for i, line in enumerate(lines) if line.split() == ["ec2:Instance", "instance"]]
    assert lines[at + 1].strip().split("; ")[:2] == [
        "delete-before-replace", "ignore: ami"]


def test_hand_written_project_fails_with_exactly_the_expected_violations(capsys):
    code, report = plan_json(capsys, str(HANDWRITTEN))
    assert code == 1
    (stack,) = report["stacks"]
    assert (stack["project"], stack["stack"], stack["status"]) == ("handwritten-gpu", "dev", "fail")
    assert sorted((v["policy"], v["level"], v["resourceName"]) for v in stack["violations"]) == HANDWRITTEN_FINDINGS
    messages = {v["policy"]: v["message"] for v in stack["violations"]}
    assert messages["ssh-ingress-restricted"].startswith("SecurityGroup 'train-sg' ingress[0] opens port 22 to "
                                                         "0.0.0.0/0 (the whole internet)")
    assert messages["spot-only-with-checkpointing"].startswith("Instance 'train-box' (g5.xlarge) is on-demand")


def test_several_stacks_and_a_stack_file(capsys):
    code, report = plan_json(capsys, "aws-lora-7b", str(HANDWRITTEN / "Pulumi.dev.yaml"))
    assert code == 1
    assert [(s["stack"], s["status"]) for s in report["stacks"]] == [("aws-lora-7b", "pass"), ("dev", "fail")]


def test_policy_config_file_downgrades_to_advisory(tmp_path, capsys):
    config = tmp_path / "policy-config.json"
    config.write_text(json.dumps({"all": "advisory", "ssh-ingress-restricted": {"enforcementLevel": "mandatory",
                                                                                "ports": [22, 8888]}}))
    code, report = plan_json(capsys, str(HANDWRITTEN), "--policy-config", str(config))
    assert code == 1
    levels = {(v["policy"], v["level"]) for v in report["stacks"][0]["violations"]}
    assert ("ssh-ingress-restricted", "mandatory") in levels and ("budget-tags", "advisory") in levels
    config.write_text(json.dumps({"all": "advisory"}))
    code, report = plan_json(capsys, str(HANDWRITTEN), "--policy-config", str(config))
    assert code == 0  # advisories are allowed
    assert report["stacks"][0]["status"] == "pass" and report["stacks"][0]["violations"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"max-runtime": {"maxHours": -1}}', "policy config: max-runtime: maxHours: -1 is less than or equal to"),
        # A misspelt key is refused, not ignored (the rule would silently run on its default).
        ('{"budget-tags": {"requiredTag": ["team"]}}',
         "policy config: budget-tags: (top): Additional properties are not allowed ('requiredTag' was unexpected)"),
        ('{"budget-tags": {"requiredTags": "team"}}', "policy config: budget-tags: requiredTags: 'team' is not of type"),
    ],
)
def test_bad_policy_config_is_bad_input(tmp_path, capsys, content, message):
    config = tmp_path / "policy-config.json"
    config.write_text(content)
    assert main(["plan", "aws-lora-7b", "--policy-config", str(config)]) == 2
    assert message in capsys.readouterr().err


def test_unknown_stack_is_bad_input(capsys):
    assert main(["plan", "no-such-stack"]) == 2
    err = capsys.readouterr().err
    assert "no stack 'no-such-stack'" in err and "aws-lora-7b" in err


def test_invalid_spec_is_bad_input(tmp_path, capsys):
    (tmp_path / "Pulumi.yaml").write_text("name: gpulease\nruntime: python\n")
    (tmp_path / "__main__.py").write_text("from components.program import main\n\nmain()\n")
    (tmp_path / "Pulumi.broken.yaml").write_text(
        "config:\n  aws:region: us-east-1\n  gpulease:experiment:\n    name: Bad_Name\n"
    )
    code, report = plan_json(capsys, str(tmp_path))
    assert code == 2
    (stack,) = report["stacks"]
    assert stack["status"] == "error" and "name" in stack["error"]


def test_markdown_comment(capsys):
    code = main(["plan", "aws-lora-7b", str(HANDWRITTEN), "--format", "markdown"])
    text = capsys.readouterr().out
    assert code == 1
    assert text.startswith(COMMENT_MARKER + "\n## gpulease plan: 2 stacks, 1 needs attention")
    assert "| `gpulease/aws-lora-7b` | ✅ pass |" in text
    # Four resources; an hourly GPU with no max runtime has no worst case to bound it.
    (row,) = [line for line in text.splitlines() if line.startswith("| `handwritten-gpu/dev` |")]
    assert re.fullmatch(r"\| `handwritten-gpu/dev` \| ❌ fail \| 4 \| 13 \| 2 \| \$\d+\.\d{3}/h \| "
                        r"unbounded \(no max runtime\) \| n/a \|", row), row
    assert "#### Mandatory violations (block the deployment) (13)" in text
    assert "#### Advisory findings (2)" in text
    assert "| `budget-prices-fresh` | (stack) | the cost estimate and the budget check used prices older than 30 days: " \
        "2025-06-01 (" in text
    assert "| `ssh-ingress-restricted` | train-sg | SecurityGroup 'train-sg' ingress[0] opens port 22" in text
    assert "#### Estimated cost" in text and "| llama7b-lora |" in text
    assert text.count("```mermaid") == 2
    assert 'n0["handwritten-gpu/dev"]' in text and '["Instance<br/>train-box"]' in text


def test_terminal_report_and_output_file(tmp_path, capsys):
    out = tmp_path / "plan.txt"
    assert main(["plan", str(HANDWRITTEN), "--output", str(out)]) == 1
    text = out.read_text()
    assert "handwritten-gpu/dev" in text and "FAIL: 13 mandatory, 2 advisory" in text
    assert "ssh-ingress-restricted" in text and "exit code 1" in text
    assert capsys.readouterr().out == ""


def _resource(i: int, parent: str | None, type_: str = "aws:ec2/instance:Instance") -> CapturedResource:
    urn = f"urn:pulumi:s::p::{type_}::r{i}"
    return CapturedResource(urn=urn, type=type_, name=f"r{i}", custom=True, inputs={}, outputs={}, id=None,
                            parent=parent, provider=None, protect=False, retain_on_delete=False, ignore_changes=[],
                            dependencies=[], property_dependencies={}, delete_before_replace=False,
                            replace_on_changes=[])


def test_mermaid_tree_follows_parents_and_collapses_large_sweeps():
    comp = _resource(0, None, "gpulease:aws:GpuExperiment")
    small = Rendering(project="p", stack="s", config={}, resources=[comp, _resource(1, comp.urn),
                                                                    _resource(2, comp.urn, "aws:ebs/volume:Volume")])
    text = mermaid(StackReview(Path("."), Path("Pulumi.s.yaml"), small, None))
    assert text.splitlines() == [
        "flowchart LR",
        '  n0["p/s"]',
        '  n1["GpuExperiment<br/>r0"]',
        "  n0 --> n1",
        '  n2["Instance<br/>r1"]',
        "  n1 --> n2",
        '  n3["Volume<br/>r2"]',
        "  n1 --> n3",
    ]
    many = [comp, *[_resource(i, comp.urn) for i in range(1, MERMAID_MAX_NODES + 5)]]
    big = Rendering(project="p", stack="s", config={}, resources=many)
    text = mermaid(StackReview(Path("."), Path("Pulumi.s.yaml"), big, None))
    assert f'["{MERMAID_MAX_NODES + 4} x Instance"]' in text
    assert len(text.splitlines()) == 6


def test_the_project_root_names_every_stack_in_stacks(monkeypatch):
    """What the pull-request workflow runs: `gpulease plan .` from the repository root."""
    from gpulease.review import stacks

    monkeypatch.chdir(ROOT)
    pairs = stacks.resolve(".")
    assert {f.name for _, f in pairs} == {p.name for p in (ROOT / "stacks").glob("Pulumi.*.yaml")}
    assert {"Pulumi.aws-lora-7b.yaml", "Pulumi.ali-lora-7b.yaml"} <= {f.name for _, f in pairs}
    assert {proj for proj, _ in pairs} == {ROOT}


def test_projects_gpulease_cannot_run_are_bad_input(tmp_path, capsys):
    (tmp_path / "Pulumi.yaml").write_text("name: infra\nruntime: nodejs\n")
    (tmp_path / "Pulumi.dev.yaml").write_text("config: {}\n")
    assert main(["plan", str(tmp_path)]) == 2
    assert "runtime 'nodejs' is not supported; gpulease plan runs Python Pulumi programs" in capsys.readouterr().err


def test_a_project_main_directory_is_honoured(tmp_path, capsys):
    """`main: src/` in Pulumi.yaml: the program lives in a subdirectory."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "__main__.py").write_text((HANDWRITTEN / "__main__.py").read_text())
    (tmp_path / "Pulumi.yaml").write_text("name: handwritten-gpu\nruntime: python\nmain: src/\n")
    (tmp_path / "Pulumi.dev.yaml").write_text((HANDWRITTEN / "Pulumi.dev.yaml").read_text())
    code, report = plan_json(capsys, str(tmp_path))
    assert code == 1
    assert sorted((v["policy"], v["level"], v["resourceName"]) for v in report["stacks"][0]["violations"]) == \
        HANDWRITTEN_FINDINGS
