"""``up``/``down`` when ``pulumi stack output --json`` answers with nothing (or no JSON object): the real
Automation API parse path (``AutomationBackend.outputs``, the CLI's commands recorded at ``PulumiCommand.run``),
one line on stderr, the envelope with ``--json``, exit 1, never a JSONDecodeError traceback."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from pulumi import automation as auto
from pulumi.automation._cmd import CommandResult

from gpulease.cli.main import main
from gpulease.ephemeral.backend import AutomationBackend, OutputsUnreadableError, StackInfo
from gpulease.lifecycle import capacity, deploy, verdict
from tests.support.ephemeral import RecordingBackend

STACK = "aws-lora-7b"


class CliOutputs(RecordingBackend):
    """The recording stand-in, its outputs read through the real ``AutomationBackend``."""

    def outputs(self, stack: str) -> dict[str, Any]:
        self._enter("outputs", stack)
        return AutomationBackend().outputs(stack)


@pytest.fixture
def answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "pulumi"
    script.write_text('#!/bin/sh\nif [ "$1" = version ]; then echo v3.182.0; exit 0; fi\nexit 99\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    said = {"stdout": ""}

    def run(self: Any, args: list[str], *a: Any, **kw: Any) -> CommandResult:
        return CommandResult(said["stdout"] if args[:2] == ["stack", "output"] else "", "", 0)

    monkeypatch.setattr(auto.PulumiCommand, "run", run)
    monkeypatch.setattr(verdict, "REVIEW", lambda path, stack: verdict.Verdict(
        stack=stack, status="pass", hourly_usd=0.35, worst_case="$2.80", budget_usd=40.0))
    monkeypatch.setattr(capacity, "ZONES", {"aws": lambda region: lambda itype: ["us-east-1a"]})
    return said


@pytest.mark.parametrize("stdout", ["", "[1, 2]", "{"])
def test_the_backend_says_the_outputs_are_unreadable(answer, stdout: str) -> None:
    answer["stdout"] = stdout
    with pytest.raises(OutputsUnreadableError, match=f"^cannot read the outputs of stack '{STACK}': `pulumi stack output "
                                                     "--json` did not answer with a JSON object"):
        AutomationBackend().outputs(STACK)


@pytest.mark.parametrize("command", ["up", "down"])
def test_up_and_down_fail_in_one_line_when_pulumi_prints_nothing(answer, monkeypatch, capsys, command: str) -> None:
    backend = CliOutputs(stacks={STACK: StackInfo(STACK)} if command == "down" else {})
    monkeypatch.setattr(deploy, "BACKEND", lambda: backend)
    assert main([command, STACK, "--no-wait"] if command == "up" else [command, STACK]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"gpulease: cannot read the outputs of stack '{STACK}': `pulumi stack output --json` did not "
                              "answer with a JSON object (Expecting value"), err
    assert "Traceback" not in "\n".join(err)
    if command == "down":
        assert "destroy" not in backend.ops(), "nothing is destroyed on outputs it could not read"


def test_down_json_carries_the_error_in_the_envelope(answer, monkeypatch, capsys) -> None:
    monkeypatch.setattr(deploy, "BACKEND", lambda: CliOutputs(stacks={STACK: StackInfo(STACK)}))
    assert main(["down", STACK, "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and doc["errors"][0]["code"] == "teardown-failed"
    assert doc["errors"][0]["message"].startswith(f"cannot read the outputs of stack '{STACK}'")
