"""``gpulease plan --config`` takes dotted paths (``gpu.count=2``, ``gpulease:experiment.dataDisk.sizeGb=300``)
through the same strict YAML reader as ``ephemeral --set``, laid over a copy of the stack file's config."""

from __future__ import annotations

import json

import pytest

from gpulease.cli.config_option import ConfigOptionError, parse_config
from gpulease.cli.main import main
from gpulease.review.config_overrides import ConfigPathError, lay_over

BASE = {"aws:region": "us-east-1", "gpulease:experiment": {"name": "x", "gpu": {"gpuMemoryGb": 24, "count": 1},
                                                           "dataDisk": {"sizeGb": 200}}}


def test_a_dotted_key_is_a_field_of_the_experiment_and_the_stack_file_is_not_changed():
    out = lay_over(BASE, parse_config(["gpu.count=2", "dataDisk.sizeGb=300", "ssh.allowedCidrs=[203.0.113.7/32]"]),
                   "gpulease")
    exp = out["gpulease:experiment"]
    assert exp["gpu"] == {"gpuMemoryGb": 24, "count": 2} and exp["dataDisk"] == {"sizeGb": 300}
    assert exp["ssh"] == {"allowedCidrs": ["203.0.113.7/32"]} and exp["name"] == "x"
    assert BASE["gpulease:experiment"]["gpu"]["count"] == 1 and "ssh" not in BASE["gpulease:experiment"]


def test_a_namespaced_dotted_key_is_a_path_as_pulumi_config_set_path_reads_it():
    out = lay_over(BASE, parse_config(["gpulease:experiment.gpu.count=4", "web:tags.team=ml"]), "web")
    assert out["gpulease:experiment"]["gpu"]["count"] == 4 and out["web:tags"] == {"team": "ml"}
    # A bare dotted key names the project's own key when the stack has it.
    assert lay_over({"web:tags": {"a": 1}}, parse_config(["tags.team=ml"]), "web")["web:tags"] == {"a": 1, "team": "ml"}


def test_a_path_through_a_value_that_is_not_a_mapping_is_one_line():
    with pytest.raises(ConfigPathError, match=r"--config gpu.count.x: gpulease:experiment.gpu.count is not a mapping "
                                              r"\(it is 1\), so it has no field 'x'"):
        lay_over(BASE, parse_config(["gpu.count.x=2"]), "gpulease")


@pytest.mark.parametrize(("option", "problem"), [
    ("gpu..count=2", "an empty part is not a field name in the dotted path"),
    ("gpu.count[0]=2", "'count[0]' is not a field name in the dotted path"),
    ("gpu.=2", "an empty part is not a field name"),
    ("gpu.count=&a 2", "YAML anchor &a is not accepted"),
    ("gpu.count=!!python/name:os.system x", "gpu.count"),
])
def test_a_bad_dotted_option_is_refused_by_the_strict_reader(option, problem):
    with pytest.raises(ConfigOptionError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        parse_config([option])


def test_plan_reviews_the_dotted_value(capsys):
    assert main(["plan", "aws-lora-7b", "--config", "dataDisk.sizeGb=300", "--format", "json"]) == 0
    stack = json.loads(capsys.readouterr().out)["data"]["stacks"][0]
    disks = [r for r in stack["resources"] if r["type"] == "aws:ebs/volume:Volume"]
    assert [d["inputs"]["size"] for d in disks] == [300]


def test_plan_names_a_misspelt_dotted_field(capsys):
    assert main(["plan", "aws-lora-7b", "--config", "dataDisk.sizGb=300"]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert "gpulease:experiment.dataDisk.sizGb: unknown field; did you mean sizeGb?" in out


@pytest.mark.parametrize("parts", [33, 1000, 5000])
def test_a_deep_dotted_key_is_one_line_exit_2_with_the_envelope(parts, capsys):
    key = ".".join(["gpu"] + ["a"] * (parts - 1))
    assert main(["plan", "aws-lora-7b", "--config", f"{key}=1"]) == 2
    captured = capsys.readouterr()
    assert captured.err == (f"gpulease: --config {key[:60]}...: a dotted path of {parts} parts, more than 32; "
                            "accepted: a path of at most 32 field names, e.g. gpu.count=2\n")
    assert main(["plan", "aws-lora-7b", "--json", "--config", f"{key}=1"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and doc["errors"][0]["code"] == "bad-input"
    assert doc["errors"][0]["message"].startswith(f"--config {key[:60]}...: a dotted path of {parts} parts")


def test_a_path_of_32_parts_is_still_a_path():
    assert len(parse_config([".".join(["gpu"] * 32) + "=1"])) == 1


def test_a_bare_experiment_field_is_the_experiment_s_as_ephemeral_set_reads_it():
    out = lay_over(BASE, parse_config(["budgetUsd=1", "maxRuntimeHours=2"]), "gpulease")
    assert out["gpulease:experiment"]["budgetUsd"] == 1 and out["gpulease:experiment"]["maxRuntimeHours"] == 2
    assert "budgetUsd" not in out and "gpulease:budgetUsd" not in out
    # Another project's own bare key stays that project's key.
    assert lay_over({**BASE, "web:replicas": 1}, parse_config(["replicas=3"]), "web")["replicas"] == 3


def test_plan_reviews_a_bare_experiment_field_and_names_a_misspelt_one(capsys):
    assert main(["plan", "aws-lora-7b", "--config", "budgetUsd=1", "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    [detail] = [v["message"] for v in doc["data"]["stacks"][0]["violations"] if v["policy"] == "budget-worst-case"]
    assert "exceeds budgetUsd $1.00 (the gpulease:budget-usd tag); budgetUsd 1 covers " in detail
    assert main(["plan", "aws-lora-7b", "--config", "budgtUsd=1"]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert "gpulease:experiment.budgtUsd: unknown field; did you mean budgetUsd?" in out


def test_an_invalid_spec_is_shown_as_its_lines_naming_the_stack_file_not_the_program(capsys):
    assert main(["plan", "aws-lora-7b", "--config", "maxRuntimeHours=-1", "--config", "budgetUsd=abc"]) == 2
    out = capsys.readouterr().out
    assert "\\n" not in out and "program.py" not in out
    lines = [line.strip() for line in out.splitlines()]
    at = lines.index("ERROR (not reviewed): invalid gpulease config in stack 'aws-lora-7b' "
                     "(stacks/Pulumi.aws-lora-7b.yaml):")
    assert lines[at + 1:at + 4] == [
        '- gpulease:experiment.budgetUsd: "abc" is text; accepted: a number',
        "- gpulease:experiment.maxRuntimeHours: -1 is out of range; accepted: a number greater than 0",
        "Nothing was created. The fields are documented in docs/config.md."]


def test_plan_json_of_an_invalid_spec_also_says_it_on_stderr(capsys):
    assert main(["plan", "aws-lora-7b", "--json", "--config", "budgetUsd=abc"]) == 2
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["ok"] is False and doc["errors"][0]["code"] == "bad-input"
    assert captured.err == ("gpulease: gpulease/aws-lora-7b: invalid gpulease config in stack 'aws-lora-7b' "
                            "(stacks/Pulumi.aws-lora-7b.yaml): gpulease:experiment.budgetUsd: \"abc\" is text; "
                            "accepted: a number. Nothing was created. The fields are documented in docs/config.md.\n")


def test_plan_says_stale_prices_once_briefly_and_lists_them_in_json(capsys):
    assert main(["plan", "aws-lora-7b"]) == 0
    out = capsys.readouterr().out
    [advisory] = [" ".join(line.split()) for line in out.split("\nadvisory ")[1:2]]
    assert advisory.startswith("budget-prices-fresh (stack): prices older than 30 days (their dates: the prices "
                               "line; each one: --format json); `gpulease catalog refresh` writes fresh ones")
    assert "root disk gp3 100 GB" not in out
    assert main(["plan", "aws-lora-7b", "--format", "json"]) == 0
    stack = json.loads(capsys.readouterr().out)["data"]["stacks"][0]
    [fresh] = [v["message"] for v in stack["violations"] if v["policy"] == "budget-prices-fresh"]
    assert "root disk gp3 100 GB in us-east-1" in fresh
