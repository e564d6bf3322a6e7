"""``plan --config`` and ``cost --config`` read a value as the Pulumi CLI reads the same text in a stack file (YAML
1.2: ``0x10`` is 16, ``1e3`` 1000, ``true`` a boolean, ``٣`` text), then the spec judges it: each answer is the
answer of the stack file that holds the value."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpulease.cli.main import main
from tests.support.paths import ROOT

KIT_STACK = ROOT / "stacks" / "Pulumi.aws-lora-7b.yaml"


def _problems(text: str | None) -> list[str]:
    """A spec error's field lines (the stack's name and file differ between the two ways)."""
    return [line.strip() for line in (text or "").splitlines() if line.strip().startswith("- ")]


def _plan(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    code = main(["plan", *argv, "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    if doc["data"] is None:  # refused before any review: the --config reader's own line
        return code, ("refused", [e["code"] for e in doc["errors"]])
    [stack] = doc["data"]["stacks"]
    budget = sorted(v["message"].split(";")[0] for v in stack["violations"] if v["policy"] == "budget-worst-case")
    return code, (stack["status"], _problems(stack["error"]), budget)


def _cost(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    code = main(["cost", *argv, "--json"])
    doc = json.loads(capsys.readouterr().out)
    if doc["data"] is None:
        return code, ("refused", [e["code"] for e in doc["errors"]])
    [stack] = doc["data"]["stacks"]
    budgets = [e.get("budgetUsd") for e in stack.get("experiments", [])]
    return code, (_problems(stack["error"]), stack.get("worstCaseUsd"), budgets)


@pytest.mark.parametrize("value", ["0x10", "1e3", "٣", "true"])
def test_a_config_value_is_typed_as_in_the_stack_file(value, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # a user folder: its Pulumi.NAME.yaml is found by name
    text = KIT_STACK.read_text(encoding="utf-8")
    assert "    budgetUsd: 40\n" in text
    (tmp_path / "Pulumi.typed.yaml").write_text(text.replace("    budgetUsd: 40\n", f"    budgetUsd: {value}\n"),
                                                encoding="utf-8")
    flag = ["aws-lora-7b", "--config", f"budgetUsd={value}"]
    from_file, from_flag = _plan(["typed"], capsys), _plan(flag, capsys)
    assert from_flag == from_file
    assert _cost(flag, capsys) == _cost(["typed"], capsys)
    number = {"0x10": 16, "1e3": 1000}.get(value)
    if number is None:  # text and a boolean: the spec refuses it, naming what it is, in both ways
        kind = "is text" if value == "٣" else "is a boolean"
        assert from_flag[0] == 2 and kind in " ".join(from_flag[1][1])
    else:
        assert from_flag[0] in (0, 1) and from_flag[1][1] == []
        assert _cost(flag, capsys)[1][2] == [number]


def test_cost_takes_a_dotted_config_path_like_plan(capsys):
    assert main(["cost", "aws-lora-7b", "--config", "dataDisk.sizeGb=300", "--json"]) == 0
    [stack] = json.loads(capsys.readouterr().out)["data"]["stacks"]
    assert [line["item"] for line in stack["lines"] if line["resource"] == "llama7b-lora-data"] == ["data disk gp3 300 GB"]
    assert main(["cost", "aws-lora-7b", "--config", "dataDisk.sizGb=300", "--json"]) == 2
    [stack] = json.loads(capsys.readouterr().out)["data"]["stacks"]
    assert "gpulease:experiment.dataDisk.sizGb: unknown field; did you mean sizeGb?" in " ".join(stack["error"].split())


def test_a_bad_cost_config_is_one_line_and_the_envelope(capsys):
    assert main(["cost", "aws-lora-7b", "--json", "--config", "gpu..count=2"]) == 2
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["report"] == "gpulease cost" and doc["errors"][0]["code"] == "bad-input"
    assert captured.err.startswith("gpulease: --config gpu..count: an empty part") and captured.err.count("\n") == 1
