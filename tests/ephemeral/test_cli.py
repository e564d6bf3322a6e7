"""``gpulease ephemeral ...`` end to end through the CLI: preflight refusals before anything is created, the
JSON summary, the by-hand steps, and real signals sent to a process running the orchestration."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gpulease import cli
from gpulease.cli import ephemeral
from gpulease.ephemeral import preflight
from gpulease.ephemeral.backend import StackInfo
from gpulease.review.stacks import PROJECT_ROOT
from tests.support.ephemeral import RecordingBackend, ScriptedChannel

GITHUB = {"GITHUB_RUN_ID": "9001", "GITHUB_RUN_ATTEMPT": "1", "GITHUB_SHA": "0123456789abcdef", "GITHUB_REPOSITORY": "octo/repo"}
STACK = "ci-9001-0123456"


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GITHUB.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("CI", "true")


@pytest.fixture
def stand_ins(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    made: dict[str, Any] = {"backend": RecordingBackend(), "channel": ScriptedChannel(), "credentials": []}

    def credentials(cloud: str, stack: str) -> str:
        made["credentials"].append((cloud, stack))
        return "env"

    monkeypatch.setattr(ephemeral, "BACKEND_FACTORY", lambda args: made["backend"])
    monkeypatch.setattr(ephemeral, "CHANNEL_FACTORY", lambda cfg: made["channel"])
    monkeypatch.setattr(ephemeral, "CREDENTIALS_CHECK", credentials)
    return made


def test_run_json_summary(github, stand_ins, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main([
        "ephemeral", "run", "--base-stack", "aws-lora-7b", "--set", "maxRuntimeHours=1.5", "--json",
        "--artifacts-dir", str(tmp_path / "art"), "--", "python", "train.py", "--steps", "10",
    ])
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert code == 0 and summary["exitCode"] == 0 and summary["stack"] == STACK
    assert summary["ciRun"] == "octo/repo/actions/runs/9001" and summary["maxRuntimeHours"] == 1.5
    assert summary["teardown"]["removed"] is True and summary["resources"]["count"] == 4
    assert stand_ins["credentials"] == [("aws", "aws-lora-7b")]
    # Priced from the rendered program (g5-class spot instance, disks, bucket) and scaled by the lifetime.
    assert 0 < summary["hourlyUsd"] < 5 and summary["worstCaseUsd"] > summary["hourlyUsd"]
    assert 0 <= summary["estimatedCostUsd"] <= summary["hourlyUsd"] * (summary["durationSeconds"] + 1) / 3600
    run_call = dict(stand_ins["channel"].calls)["run"]
    assert run_call["command"] == "python train.py --steps 10"
    config = stand_ins["backend"].configs[STACK]
    assert config["gpulease:experiment"]["ciRun"] == "octo/repo/actions/runs/9001"
    assert "==> up" in err and "train: step 2 loss 1.97" in err, "progress goes to stderr in --json mode"


def test_a_failed_command_is_the_exit_code_of_the_run(github, stand_ins, tmp_path: Path, capsys) -> None:
    stand_ins["channel"].exit_code = 5
    code = cli.main(["ephemeral", "run", "--base-stack", "aws-lora-7b", "--artifacts-dir", str(tmp_path), "--", "false"])
    out = capsys.readouterr().out
    assert code == 5 and "command-failed" in out and "destroyed and removed" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--base-stack", "nope", "--", "x"], "no stack 'nope'"),
        (["--base-stack", "aws-lora-7b", "--set", "gpu={instanceType: m5.large}", "--", "x"], "carries no GPU"),
        (["--base-stack", "aws-sweep-lora", "--", "x"], "declares a sweep"),
        (["--base-stack", "aws-lora-7b"], "give the training command after --"),
        (["--base-stack", "aws-lora-7b", "--stack-name", "prod", "--", "x"], "accepted: ci- followed by"),
    ],
)
def test_bad_input_is_refused_before_anything_is_created(stand_ins, argv, message, capsys) -> None:
    assert cli.main(["ephemeral", "run", *argv]) == 2
    assert message in capsys.readouterr().err
    assert stand_ins["backend"].calls == [] and stand_ins["credentials"] == []


def test_a_max_hours_of_zero_is_refused_by_the_flags_parser_before_anything(stand_ins, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["ephemeral", "run", "--base-stack", "aws-lora-7b", "--max-hours", "0", "--", "x"])
    assert exc.value.code == 2
    assert capsys.readouterr().err == (
        "gpulease ephemeral run: argument --max-hours: '0' is not a number of hours; accepted: a number above 0 and "
        "at most 168, e.g. 2 (ASCII digits); see gpulease ephemeral run --help\n")
    assert stand_ins["backend"].calls == [] and stand_ins["credentials"] == []


def test_missing_pulumi_cli_refuses_before_anything(monkeypatch, tmp_path: Path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert cli.main(["ephemeral", "run", "--base-stack", "aws-lora-7b", "--", "true"]) == 2
    assert "the Pulumi CLI is not installed" in capsys.readouterr().err


@pytest.fixture
def no_aws_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in list(os.environ):
        if key.startswith("AWS_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_missing_aws_credentials_refuse_before_anything(no_aws_credentials, monkeypatch, capsys) -> None:
    backend = RecordingBackend()
    monkeypatch.setattr(ephemeral, "BACKEND_FACTORY", lambda args: backend)
    assert cli.main(["ephemeral", "run", "--base-stack", "aws-lora-7b", "--", "true"]) == 2
    assert "runs on AWS but no AWS credentials were found" in capsys.readouterr().err
    assert backend.ops() == ["cli_version"], "only the CLI version was asked; nothing created"


def test_aws_credentials_from_the_environment_are_found_without_calling_aws(no_aws_credentials, monkeypatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "example")
    assert preflight.check_aws("s") == "env"


def test_alibaba_credentials() -> None:
    with pytest.raises(preflight.CredentialsError, match="ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET"):
        preflight.check_alicloud("ali", {})
    with pytest.raises(preflight.CredentialsError, match="ALIBABA_CLOUD_ACCESS_KEY_SECRET is not set"):
        preflight.check_alicloud("ali", {"ALIBABA_CLOUD_ACCESS_KEY_ID": "LTAI"})
    assert preflight.check_alicloud("ali", {"ALIBABA_CLOUD_ACCESS_KEY_ID": "a", "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "b"})
    oidc = {"ALIBABA_CLOUD_ROLE_ARN": "r", "ALIBABA_CLOUD_OIDC_PROVIDER_ARN": "p", "ALIBABA_CLOUD_OIDC_TOKEN_FILE": "/t"}
    assert preflight.check_alicloud("ali", oidc) == "oidc"


def test_down_only_touches_ephemeral_stacks_and_finds_this_runs_stack(github, stand_ins, capsys) -> None:
    backend: RecordingBackend = stand_ins["backend"]
    backend.stacks = {STACK: StackInfo(STACK, resource_count=5), "aws-lora-7b": StackInfo("aws-lora-7b")}
    assert cli.main(["ephemeral", "down", "aws-lora-7b"]) == 2
    assert "not an ephemeral stack" in capsys.readouterr().err and "destroy" not in backend.ops()
    assert cli.main(["ephemeral", "down", "--current-run", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["teardown"]["removed"] is True
    assert set(backend.stacks) == {"aws-lora-7b"}


def test_up_leaves_the_stack_running_and_ls_shows_it(github, stand_ins, capsys) -> None:
    assert cli.main(["ephemeral", "up", "--base-stack", "aws-lora-7b", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["ready"] is True and result["outputs"]["instanceId"] == "i-0123456789abcdef0"
    backend: RecordingBackend = stand_ins["backend"]
    assert "destroy" not in backend.ops() and STACK in backend.stacks
    backend.stacks[STACK] = StackInfo(STACK, resource_count=4)
    assert cli.main(["ephemeral", "ls", "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)["stacks"]
    assert listed["stack"] == STACK and listed["deadline"] == "2099-01-01T00:00:00Z" and listed["expired"] is False


def test_up_that_fails_is_torn_down(github, stand_ins, capsys) -> None:
    stand_ins["channel"].fail["wait_ready"] = RuntimeError("no marker")
    assert cli.main(["ephemeral", "up", "--base-stack", "aws-lora-7b"]) == 1
    assert stand_ins["backend"].ops()[-2:] == ["destroy", "remove"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_real_signal_to_the_process_during_the_job_destroys_all_but_the_bucket(tmp_path: Path, signum: int) -> None:
    record, started = tmp_path / "record.json", tmp_path / "started"
    env = {**os.environ, **GITHUB, "CI": "true", "PYTHONPATH": str(PROJECT_ROOT)}
    argv = ["ephemeral", "run", "--base-stack", "aws-lora-7b", "--artifacts-dir", str(tmp_path / "art"), "--", "python", "t.py"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.ephemeral", str(record), str(started), *argv],
        cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        for _ in range(400):
            if started.exists() or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert started.exists(), proc.communicate(timeout=10)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signum, err
    calls = json.loads(record.read_text())
    # The job had started: what it left (checkpoints, artifacts not written yet) is in the bucket only, so the
    # teardown destroys everything but the bucket, kept with the stack.
    assert [op for op, _ in calls["backend"]] == ["cli_version", "create", "up", "outputs", "destroy"]
    # aws-lora-7b declares verify: the runner waits for the instance's verification before the job.
    assert calls["channel"] == ["wait_ready", "wait_verify", "run", "download_artifacts"]
    assert "interrupted" in out and "kept" in out and "destroyed and removed" not in out


@pytest.mark.parametrize("command", ["run", "up"])
def test_a_program_that_fails_to_render_creates_nothing(
    command: str, github, stand_ins, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The spec accepts g5.99xlarge (a GPU family), but the program cannot resolve it: pulumi up would fail
    # partway. The offline render runs first, so nothing is created and the error is one line, exit 2.
    argv = ["ephemeral", command, "--base-stack", "aws-lora-7b", "--set", "gpu={instanceType: g5.99xlarge}"]
    code = cli.main([*argv, "--", "python", "train.py"] if command == "run" else argv)
    err = capsys.readouterr().err
    assert code == 2 and stand_ins["backend"].calls == [] and stand_ins["channel"].calls == []
    assert err.count("\n") == 1 and "fails to render, so nothing was created" in err and "g5.99xlarge" in err
    assert "Traceback" not in err
