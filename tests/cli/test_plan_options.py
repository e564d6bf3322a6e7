"""``gpulease plan`` of a project without stack files (``--config``, the program's defaults, ``--stack``), bad
``--config`` values, and the width of the report when it is not written to a terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpulease.cli import main
from gpulease.cli.config_option import ConfigOptionError, parse_config

PROGRAM = (
    "import pulumi, pulumi_aws as aws\n"
    "config = pulumi.Config()\n"
    "size = config.get('instanceType') or 't3.micro'\n"
    "count = config.get_int('replicas') or 1\n"
    "tags = config.get_object('tags') or {}\n"
    "for i in range(count):\n"
    "    aws.ec2.Instance(f'web-{i}', ami='ami-12345678', instance_type=size, tags=tags)\n"
    "pulumi.export('region', aws.config.region)\n"
    "pulumi.export('stack', pulumi.get_stack())\n"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "web"
    folder.mkdir()
    (folder / "Pulumi.yaml").write_text("name: web\nruntime: python\n")
    (folder / "__main__.py").write_text(PROGRAM)
    return folder


def plan(capsys, *args: str) -> tuple[int, dict]:
    code = main(["plan", *args, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def instances(stack: dict) -> list[dict]:
    return [r for r in stack["resources"] if r["type"] == "aws:ec2/instance:Instance"]


def test_a_project_without_stack_files_is_reviewed_with_the_programs_defaults(project, capsys) -> None:
    code, report = plan(capsys, str(project))
    (stack,) = report["stacks"]
    assert stack["error"] is None and stack["stack"] == "dev" and stack["stackFile"] is None
    assert [r["inputs"]["instanceType"] for r in instances(stack)] == ["t3.micro"]
    assert stack["outputs"]["stack"] == "dev"
    assert code in (0, 1)


def test_config_values_are_typed_and_namespaced(project, capsys) -> None:
    code, report = plan(capsys, str(project), "--config", "instanceType=g5.xlarge", "--config", "replicas=2",
                        "--config", "aws:region=eu-west-1", "--config", "tags={team: ml, cost-center: r1}",
                        "--stack", "gpu")
    (stack,) = report["stacks"]
    assert stack["error"] is None and stack["stack"] == "gpu" and stack["outputs"]["stack"] == "gpu"
    assert [r["inputs"]["instanceType"] for r in instances(stack)] == ["g5.xlarge", "g5.xlarge"]
    assert all(r["inputs"]["tags"] == {"team": "ml", "cost-center": "r1"} for r in instances(stack))
    assert stack["outputs"]["region"] == "eu-west-1"
    # The GPU instances are judged (no deadline, no budget): --config reached the rules too.
    assert code == 1 and any(v["resourceName"] == "web-0" for v in stack["violations"])


def test_config_overrides_a_stack_files_value_and_stack_selects_one(project, capsys) -> None:
    (project / "Pulumi.prod.yaml").write_text("config:\n  web:instanceType: m5.large\n  web:replicas: 3\n")
    (project / "Pulumi.test.yaml").write_text("config:\n  web:instanceType: t3.nano\n")
    _, report = plan(capsys, str(project), "--stack", "prod", "--config", "web:replicas=1")
    (stack,) = report["stacks"]
    assert stack["stack"] == "prod" and stack["stackFile"].endswith("Pulumi.prod.yaml")
    assert [r["inputs"]["instanceType"] for r in instances(stack)] == ["m5.large"]


@pytest.mark.parametrize(
    ("option", "problem"),
    [
        ("instanceType", "accepted: key=value"),
        ("=g5.xlarge", "accepted: key=value"),
        ("a:b:c=1", "accepted: key=value"),
        (":x=1", "accepted: key=value"),
        ("tags={unclosed", "not valid YAML"),
        ("x=&a [1]", "anchor &a is not accepted"),
    ],
)
def test_a_bad_config_option_is_one_clear_error_and_exit_2(project, capsys, option, problem) -> None:
    with pytest.raises(ConfigOptionError, match=problem):
        parse_config([option])
    code = main(["plan", str(project), "--config", option, "--format", "json"])
    captured = capsys.readouterr()
    assert code == 2 and captured.err.count("\n") == 1 and problem in captured.err and "Traceback" not in captured.err
    # A JSON caller reads the same refusal from the envelope on stdout.
    doc = json.loads(captured.out)
    assert doc["report"] == "gpulease plan" and doc["ok"] is False and doc["data"] is None
    [error] = doc["errors"]
    assert error["code"] == "bad-input" and problem in error["message"]


def test_config_values_are_yaml_scalars() -> None:
    assert parse_config(["a=3", "b=true", "c=text", "d=[1, 2]", "e=", "f=0.5", "g='007'"]) == {
        "a": 3, "b": True, "c": "text", "d": [1, 2], "e": "", "f": 0.5, "g": "007"}


def test_the_table_is_wide_when_not_written_to_a_terminal(project, capsys) -> None:
    main(["plan", str(project), "--config", "instanceType=g5.xlarge", "--format", "table"])
    out = capsys.readouterr().out
    widths = [len(line) for line in out.splitlines()]
    assert max(widths) > 100 and max(widths) <= 160


def test_plan_never_writes_its_report_over_a_catalog_override_it_reads(tmp_path, monkeypatch, capsys) -> None:
    overrides = tmp_path / "prices-override.yaml"
    text = "# Written by `gpulease catalog refresh` on 2026-11-30\nasOf: 2026-11-30\n"
    overrides.write_text(text)
    monkeypatch.setenv("GPULEASE_CATALOG_OVERRIDES", str(overrides))
    for force in ([], ["--force"]):
        assert main(["plan", "aws-lora-7b", "--output", str(overrides), *force]) == 2
        assert "reads" in capsys.readouterr().err
    assert overrides.read_text() == text
