"""CLI mistakes: each is one line on stderr with exit code 2 (bad input), never a traceback."""

from __future__ import annotations

import json

import pytest

from gpulease.cli import main

NAN_PRICE = "regions:\n  - cloud: aws\n    region: us-east-1\n    blockStorageGbMonth: {gp3: .nan}\n"
NEGATIVE_PRICE = "regions:\n  - cloud: aws\n    region: us-east-1\n    objectStorageGbMonth: -0.5\n"
EMPTY_PRICE = "regions:\n  - cloud: aws\n    region: us-east-1\n    blockStorageGbMonth: {gp3: }\n"
NAN_INSTANCE_PRICE = "instances:\n  - cloud: aws\n    type: g5.xlarge\n    prices: {us-east-1: .nan}\n"


def _one_line_error(capsys, code: int) -> str:
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert err.startswith("gpulease: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(("where", "phrase"), [("missing/plan.md", "does not exist"), (".", "is a folder")])
def test_plan_output_that_cannot_be_written_is_refused_before_any_review(tmp_path, capsys, monkeypatch, where, phrase):
    def no_review(*args, **kwargs):
        raise AssertionError("the stacks were rendered before the --output check")

    monkeypatch.setattr("gpulease.cli.plan.review", no_review)
    err = _one_line_error(capsys, main(["plan", "aws-lora-7b", "--output", str(tmp_path / where)]))
    assert "--output" in err and phrase in err


def test_policy_config_that_is_binary_is_refused_naming_the_file(tmp_path, capsys):
    config = tmp_path / "policy.json"
    config.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    err = _one_line_error(capsys, main(["plan", "aws-lora-7b", "--policy-config", str(config)]))
    assert f"{config}:1: is not UTF-8 text" in err


@pytest.mark.parametrize("content", ['{"all": []}', '{"all": "advisory", "all": "disabled"}', '{"x": NaN}'])
def test_policy_config_of_the_wrong_shape_is_refused(tmp_path, capsys, content):
    config = tmp_path / "policy.json"
    config.write_text(content)
    err = _one_line_error(capsys, main(["plan", "aws-lora-7b", "--policy-config", str(config)]))
    assert "policy config" in err


@pytest.mark.parametrize(
    ("content", "phrase"),
    [
        (NAN_PRICE, "blockStorageGbMonth.gp3: Input should be a finite number"),
        (NEGATIVE_PRICE, "objectStorageGbMonth: Input should be greater than or equal to 0"),
        (EMPTY_PRICE, "blockStorageGbMonth.gp3: Input should be a valid number"),
        (NAN_INSTANCE_PRICE, "prices.us-east-1: Input should be a finite number"),
    ],
)
@pytest.mark.parametrize("command", [["cost", "aws-lora-7b"], ["size", "--params", "7B"]])
def test_catalog_overrides_with_bad_prices_are_refused(tmp_path, capsys, command, content, phrase):
    override = tmp_path / "prices.yaml"
    override.write_text(content)
    err = _one_line_error(capsys, main([*command, "--catalog", str(override)]))
    assert str(override) in err and phrase in err and "$nan" not in err


@pytest.mark.parametrize("command", [["cost", "aws-lora-7b"], ["size", "--params", "7B"]])
def test_a_binary_catalog_override_is_refused(tmp_path, capsys, command):
    override = tmp_path / "prices.yaml"
    override.write_bytes(bytes(range(256)))
    err = _one_line_error(capsys, main([*command, "--catalog", str(override)]))
    assert f"{override}:2: is not UTF-8 text (byte 0x80)" in err  # the first line ends at byte 10


@pytest.mark.parametrize("ending", ["import sys\nsys.exit(0)\n", "raise SystemExit('bye')\n"])
def test_a_program_that_exits_during_render_is_a_partial_review(tmp_path, capsys, ending):
    project = tmp_path / "exits"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: exits\nruntime: python\n")
    (project / "Pulumi.dev.yaml").write_text("config: {}\n")
    (project / "__main__.py").write_text(
        "import pulumi_aws as aws\n"
        "aws.ec2.SecurityGroup('early', description='registered before the exit')\n" + ending
    )
    code = main(["plan", str(project), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    (stack,) = report["stacks"]
    # What it registered before the exit is judged; the review is partial, and exit 3 says so (never a pass).
    assert code == 3 and stack["status"] == "partial" and stack["partial"] is True
    assert [r["name"] for r in stack["resources"]] == ["early"]
    assert any(v["policy"] == "budget-tags" and v["resourceName"] == "early" for v in stack["violations"])
    assert "the program called sys.exit(" in stack["error"] and "before it finished" in stack["error"]


def test_an_unknown_stack_is_one_line(capsys):
    err = _one_line_error(capsys, main(["plan", "no-such-stack"]))
    assert "no stack 'no-such-stack'" in err and "known stacks: " in err


def test_a_spec_error_is_one_line_on_the_cli(capsys):
    argv = ["ephemeral", "up", "--base-stack", "aws-lora-7b", "--stack-name", "ci-1-abc1234", "--set", "budgetUsd=-1",
            "--set", "ssh.user=root;sh"]
    err = _one_line_error(capsys, main(argv))
    assert "gpulease:experiment.budgetUsd: -1 is out of range; accepted: a number greater than 0" in err
    assert "gpulease:experiment.ssh.user: 'root;sh' is not a user name" in err
