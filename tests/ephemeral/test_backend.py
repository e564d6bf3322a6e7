"""The real ``AutomationBackend``: the Pulumi CLI commands the Automation API would run for each operation
(recorded at ``PulumiCommand.run``, the one place every CLI call goes through; no Pulumi CLI runs), and the
errors for a missing or too old CLI (a fake ``pulumi`` script that only prints a version)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from pulumi import automation as auto
from pulumi.automation import errors as auto_errors
from pulumi.automation._cmd import CommandResult

from gpulease.ephemeral.backend import (
    AutomationBackend,
    PulumiCliError,
    ResourceEvent,
    StackExistsError,
    StackMissingError,
)
from gpulease.review.stacks import PROJECT_ROOT

STACK = "ci-555-1234567"


def fake_pulumi(directory: Path, version: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "pulumi"
    script.write_text(f'#!/bin/sh\nif [ "$1" = version ]; then echo "{version}"; exit 0; fi\necho "unexpected: $*" >&2\nexit 99\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


@pytest.fixture
def only_fake_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def install(version: str) -> Path:
        bin_dir = tmp_path / "bin"
        fake_pulumi(bin_dir, version)
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
        return bin_dir

    return install


def test_missing_cli_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(PulumiCliError) as err:
        AutomationBackend().cli_version()
    assert "Pulumi CLI is not installed (no 'pulumi' on PATH)" in str(err.value)
    assert "3.182.0 or newer" in str(err.value) and "Nothing was changed" in str(err.value)


@pytest.mark.parametrize("old", ["v3.100.0", "v3.181.9", "v2.25.2"])
def test_too_old_cli_is_a_clear_error(only_fake_cli, old: str) -> None:
    only_fake_cli(old)
    with pytest.raises(PulumiCliError) as err:
        AutomationBackend().cli_version()
    assert f"too old: found {old.removeprefix('v')}, gpulease needs 3.182.0 or newer" in str(err.value)


def test_a_current_cli_is_accepted(only_fake_cli) -> None:
    only_fake_cli("v3.182.2")
    assert AutomationBackend().cli_version() == "3.182.2"


class Recorder:
    """Stands in for ``PulumiCommand.run``: records each CLI invocation and answers like the CLI would."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.fail: dict[str, BaseException] = {}

    def __call__(self, command, args, cwd, additional_env, on_output=None, on_error=None) -> CommandResult:
        args = list(args)
        self.calls.append({"args": args, "cwd": cwd, "env": dict(additional_env)})
        joined = " ".join(args[:2])
        for key, exc in self.fail.items():
            if joined.startswith(key):
                raise exc
        if args[:1] in (["up"], ["destroy"]):
            op = "create" if args[0] == "up" else "delete"
            log = args[args.index("--event-log") + 1]
            meta = {"op": op, "urn": f"urn:pulumi:{STACK}::gpulease::aws:ec2/instance:Instance::exp1", "type": "aws:ec2/instance:Instance"}
            stack_meta = {"op": op, "urn": f"urn:pulumi:{STACK}::gpulease::pulumi:pulumi:Stack::gpulease", "type": "pulumi:pulumi:Stack"}
            with open(log, "a", encoding="utf-8") as f:
                for n, event in enumerate(
                    [{"resourcePreEvent": {"metadata": stack_meta}}, {"resourcePreEvent": {"metadata": meta}},
                     {"resOutputsEvent": {"metadata": meta}}, {"cancelEvent": {}}]
                ):
                    f.write(json.dumps({"sequence": n, "timestamp": 0, **event}) + "\n")
            if on_output:
                on_output(f"{args[0]} done")
            return CommandResult("", "", 0)
        if args[:2] == ["stack", "history"]:
            kind, changes = ("update", {"create": 13}) if len(self.ops("up")) else ("destroy", {"delete": 13})
            if self.ops("destroy"):
                kind, changes = "destroy", {"delete": 13}
            entry = {"kind": kind, "startTime": "2026-12-01T08:00:00.000Z", "message": "", "environment": {},
                     "config": {}, "result": "succeeded", "resourceChanges": changes}
            return CommandResult(json.dumps([entry]), "", 0)
        if args[:2] == ["stack", "output"]:
            return CommandResult(json.dumps({"deadline": "2026-12-01T10:00:00Z", "instanceId": "i-1"}), "", 0)
        if args[:2] == ["stack", "ls"]:
            return CommandResult(json.dumps([
                {"name": STACK, "current": False, "updateInProgress": False, "lastUpdate": "2026-12-01T08:00:00.000Z",
                 "resourceCount": 14},
                {"name": "aws-lora-7b", "current": True},
            ]), "", 0)
        return CommandResult("", "", 0)

    def ops(self, first: str) -> list[list[str]]:
        return [c["args"] for c in self.calls if c["args"][:1] == [first]]

    def commands(self) -> list[list[str]]:
        return [c["args"] for c in self.calls]


@pytest.fixture
def recorder(only_fake_cli, monkeypatch: pytest.MonkeyPatch) -> Recorder:
    only_fake_cli("v3.182.0")
    rec = Recorder()
    monkeypatch.setattr(auto.PulumiCommand, "run", lambda self, *a, **kw: rec(self, *a, **kw))
    return rec


def test_create_initialises_the_stack_then_sets_structured_config_in_one_call(recorder: Recorder) -> None:
    backend = AutomationBackend(secrets_provider="awskms://alias/pulumi-ci")
    config = {"aws:region": "us-east-1", "gpulease:experiment": {"name": "exp1", "maxRuntimeHours": 2.0, "ciRun": "r/1"}}
    backend.create(STACK, config)
    init, set_all = recorder.commands()
    assert init == ["stack", "init", STACK, "--secrets-provider", "awskms://alias/pulumi-ci"]
    assert set_all[:5] == ["config", "set-all", "--stack", STACK, "--json"]
    payload = json.loads(set_all[5])
    assert payload["gpulease:experiment"]["objectValue"] == config["gpulease:experiment"]
    assert payload["aws:region"] == {"value": "us-east-1", "secret": False}
    assert {c["cwd"] for c in recorder.calls} == {str(PROJECT_ROOT)}, "the workspace is this project directory"


def test_create_of_an_existing_name_is_refused_and_a_half_made_stack_removed(recorder: Recorder) -> None:
    recorder.fail["stack init"] = auto_errors.StackAlreadyExistsError(CommandResult("", "already exists", 255))
    with pytest.raises(StackExistsError):
        AutomationBackend().create(STACK, {"aws:region": "us-east-1"})
    assert recorder.commands() == [["stack", "init", STACK]], "nothing else is touched"

    recorder.calls.clear()
    recorder.fail = {"config set-all": auto_errors.CommandError(CommandResult("", "boom", 1))}
    with pytest.raises(auto_errors.CommandError):
        AutomationBackend().create(STACK, {"aws:region": "us-east-1"})
    assert recorder.commands()[-1] == ["stack", "rm", "--yes", STACK]


def test_up_selects_the_stack_runs_up_and_streams_output_and_resource_events(recorder: Recorder) -> None:
    lines: list[str] = []
    events: list[ResourceEvent] = []
    result = AutomationBackend().up(STACK, lines.append, events.append)
    select, up = recorder.commands()[:2]
    assert select == ["stack", "select", "--stack", STACK]
    assert up[:3] == ["up", "--yes", "--skip-preview"]
    assert {"--color", "never", "--suppress-progress", "--event-log"} <= set(up)
    assert up[-2:] == ["--stack", STACK]
    assert result.resource_changes == {"create": 13}
    assert lines == ["up done"]
    # The stack's own root resource is not a resource of interest; the instance's start and end are.
    assert [(e.op, e.type, e.done) for e in events] == [
        ("create", "aws:ec2/instance:Instance", False),
        ("create", "aws:ec2/instance:Instance", True),
    ]


def test_outputs_destroy_remove_and_list(recorder: Recorder) -> None:
    backend = AutomationBackend()
    assert backend.outputs(STACK) == {"deadline": "2026-12-01T10:00:00Z", "instanceId": "i-1"}
    assert recorder.commands() == [
        ["stack", "output", "--json", "--stack", STACK],
        ["stack", "output", "--json", "--show-secrets", "--stack", STACK],
    ], "outputs are read without selecting the stack"
    recorder.calls.clear()
    assert backend.destroy(STACK, lambda line: None, lambda e: None).resource_changes == {"delete": 13}
    destroy = recorder.ops("destroy")[0]
    assert destroy[0] == "destroy" and {"--yes", "--skip-preview"} <= set(destroy) and destroy[-2:] == ["--stack", STACK]
    assert "--remove" not in destroy, "the stack is removed only after its resources are gone"
    # The program runs with the destroy: a spot instance's before_delete hook cancels its request.
    assert "--run-program=true" in destroy
    recorder.calls.clear()
    backend.remove(STACK)
    assert recorder.commands() == [["stack", "rm", "--yes", STACK]], "never --force: that would orphan resources"
    stacks = backend.list_stacks()
    assert [s.name for s in stacks] == [STACK, "aws-lora-7b"]
    assert stacks[0].resource_count == 14 and stacks[0].last_update.tzinfo is not None
    assert recorder.commands()[-1] == ["stack", "ls", "--json"]


def test_a_missing_stack_is_reported_as_such(recorder: Recorder) -> None:
    recorder.fail["stack select"] = auto_errors.StackNotFoundError(CommandResult("", "no stack named", 255))
    with pytest.raises(StackMissingError):
        AutomationBackend().destroy(STACK, lambda line: None, lambda e: None)
    recorder.fail = {"stack rm": auto_errors.StackNotFoundError(CommandResult("", "no stack named", 255))}
    with pytest.raises(StackMissingError):
        AutomationBackend().remove(STACK)
