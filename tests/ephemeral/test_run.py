"""``ephemeral run``: the orchestration over a recording backend and a scripted instance, every way it can end."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from gpulease.ephemeral import signals
from gpulease.ephemeral.backend import StackInfo
from gpulease.ephemeral.channel import ChannelError
from gpulease.ephemeral.config import build_config
from gpulease.ephemeral.orchestrator import EXIT_TEARDOWN_FAILED, EphemeralRun, RunOptions
from gpulease.ephemeral.progress import PlainProgress
from gpulease.ephemeral.signals import guard_signals
from tests.support.ephemeral import RecordingBackend, ScriptedChannel, make_project, send_self
from tests.support.specs import experiment

STACK = "ci-4242-abc1234"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


def config_for(project: Path, **kw: Any):
    return build_config("base", STACK, ci_run="octo/repo/actions/runs/4242", project_dir=project, **kw)


def execute(project: Path, backend: RecordingBackend, channel: ScriptedChannel, tmp_path: Path, **kw: Any):
    progress_file = tmp_path / "progress.log"
    with progress_file.open("w") as stream:
        runner = EphemeralRun(backend, lambda cfg: channel, PlainProgress(stream), sleep=lambda s: None)
        summary = runner.execute(config_for(project, **kw), RunOptions(command="python train.py", artifacts_dir=tmp_path / "art"))
    return summary, progress_file.read_text()


def torn_down(backend: RecordingBackend) -> bool:
    ops = backend.ops()
    return ops.count("destroy") >= 1 and ops[-1] == "remove" and STACK not in backend.stacks


def test_success_runs_every_step_in_order_and_tears_down(project: Path, tmp_path: Path) -> None:
    backend, channel = RecordingBackend(), ScriptedChannel()
    summary, log = execute(project, backend, channel, tmp_path)
    assert backend.calls == [("create", STACK), ("up", STACK), ("outputs", STACK), ("destroy", STACK), ("remove", STACK)]
    assert [op for op, _ in channel.calls] == ["wait_ready", "run", "download_artifacts"]
    run_call = channel.calls[1][1]
    assert run_call["command"] == "python train.py" and run_call["job"] == STACK
    assert summary["exitCode"] == 0 and summary["outcome"] == "succeeded"
    assert summary["teardown"] == {"keptBuckets": [], "attempted": True, "destroyed": True, "removed": True,
                                   "resourcesDeleted": 4, "error": None}
    assert json.loads((tmp_path / "art" / "metrics.json").read_text()) == {"loss": 1.97}
    assert summary["artifacts"] == [str(tmp_path / "art" / "metrics.json")]
    assert summary["resources"]["count"] == 4 and summary["instanceType"] == "g5.xlarge"
    assert [s["name"] for s in summary["steps"]] == [
        "create stack", "up", "wait for instance", "train", "collect artifacts", "destroy", "remove stack"
    ]
    # Streamed as it happened: the training log lines, in order, between the step markers.
    assert log.index("train: step 1 loss 2.31") < log.index("train: step 2 loss 1.97") < log.index("<== train ok")


@pytest.mark.parametrize(
    ("where", "exit_code", "channel_ops"),
    [
        ("backend:up", 1, []),
        ("backend:outputs", 1, []),
        ("channel:wait_ready", 1, ["wait_ready"]),
    ],
)  # a failing collection, or a job that did not finish, keeps the bucket: tests/ephemeral/test_artifacts_kept.py,
#    tests/ephemeral/test_run_keeps_bucket_once_the_job_ran.py
def test_every_failing_step_still_destroys_and_removes(
    project: Path, tmp_path: Path, where: str, exit_code: int, channel_ops: list[str]
) -> None:
    backend, channel = RecordingBackend(), ScriptedChannel()
    side, op = where.split(":")
    target = backend if side == "backend" else channel
    target.fail[op] = ChannelError(f"{op} broke") if side == "channel" else RuntimeError(f"{op} broke")
    summary, _ = execute(project, backend, channel, tmp_path)
    assert torn_down(backend), backend.calls
    assert [c for c, _ in channel.calls] == channel_ops
    assert summary["exitCode"] == exit_code and summary["outcome"] == "failed"
    assert f"{op} broke" in summary["error"]
    assert summary["teardown"]["removed"] is True


def test_command_failure_returns_its_exit_code_and_still_collects_artifacts(project: Path, tmp_path: Path) -> None:
    backend, channel = RecordingBackend(), ScriptedChannel(exit_code=7)
    summary, _ = execute(project, backend, channel, tmp_path)
    assert summary["exitCode"] == 7 and summary["outcome"] == "command-failed" and summary["commandExitCode"] == 7
    assert ("download_artifacts", str(tmp_path / "art")) in channel.calls
    assert (tmp_path / "art" / "metrics.json").exists()
    assert torn_down(backend)


def test_an_error_in_training_is_not_hidden_by_a_failed_artifact_download(project: Path, tmp_path: Path) -> None:
    backend, channel = RecordingBackend(), ScriptedChannel()
    channel.fail["run"] = ChannelError("job state unreadable")
    channel.fail["download_artifacts"] = ChannelError("bucket gone")
    summary, log = execute(project, backend, channel, tmp_path)
    assert "job state unreadable" in summary["error"] and summary["failedStep"] == "train"
    assert "artifacts not collected: bucket gone" in log
    # the instance is destroyed; the bucket that may still hold the artifacts is kept (test_artifacts_kept.py)
    assert backend.ops().count("destroy") == 1 and backend.kept_buckets == [("gpulease-bucket",)]


def test_an_unexpected_exception_still_tears_down(project: Path, tmp_path: Path) -> None:
    backend = RecordingBackend()

    def broken_factory(cfg):
        raise KeyError("no channel for this cloud")

    with (tmp_path / "p.log").open("w") as stream:
        summary = EphemeralRun(backend, broken_factory, PlainProgress(stream), sleep=lambda s: None).execute(
            config_for(project), RunOptions(command="true", artifacts_dir=tmp_path / "art")
        )
    assert torn_down(backend)
    assert summary["exitCode"] == 1 and "KeyError" in summary["error"]


@pytest.mark.parametrize(
    ("signum", "side", "op"),
    [
        (signal.SIGINT, "backend", "up"),
        (signal.SIGTERM, "backend", "up"),
        (signal.SIGINT, "channel", "wait_ready"),
        (signal.SIGTERM, "channel", "wait_ready"),
    ],
)
def test_a_signal_at_any_step_tears_down_and_exits_128_plus_signum(
    project: Path, tmp_path: Path, signum: int, side: str, op: str
) -> None:
    backend, channel = RecordingBackend(), ScriptedChannel()
    (backend if side == "backend" else channel).hooks[op] = send_self(signum)
    before = signal.getsignal(signum)
    summary, _ = execute(project, backend, channel, tmp_path)
    assert torn_down(backend), backend.calls
    assert summary["exitCode"] == 128 + signum and summary["outcome"] == "interrupted"
    assert signal.getsignal(signum) is before, "the previous handler is restored"


def test_a_second_signal_during_teardown_does_not_stop_it(project: Path, tmp_path: Path) -> None:
    backend, channel = RecordingBackend(), ScriptedChannel()
    channel.hooks["wait_ready"] = send_self(signal.SIGTERM)
    backend.hooks["destroy"] = send_self(signal.SIGINT)  # impatient Ctrl-C while destroying
    summary, log = execute(project, backend, channel, tmp_path)
    assert torn_down(backend)
    assert summary["exitCode"] == 128 + signal.SIGTERM
    assert "received SIGINT during teardown; teardown finished first" in log


def test_a_transient_destroy_failure_is_retried(project: Path, tmp_path: Path) -> None:
    backend = RecordingBackend(destroy_failures=1)
    summary, log = execute(project, backend, ScriptedChannel(), tmp_path)
    assert backend.ops().count("destroy") == 2 and backend.ops()[-1] == "remove"
    assert summary["exitCode"] == 0 and "destroy attempt 1/3 failed: DependencyViolation" in log


def test_a_stack_that_cannot_be_destroyed_is_kept_for_gc_never_removed(project: Path, tmp_path: Path) -> None:
    backend = RecordingBackend(destroy_failures=99)
    summary, _ = execute(project, backend, ScriptedChannel(), tmp_path)
    assert backend.ops().count("destroy") == 3 and "remove" not in backend.ops()
    assert STACK in backend.stacks, "removing it would orphan live resources"
    assert summary["exitCode"] == EXIT_TEARDOWN_FAILED and summary["outcome"] == "teardown-failed"
    assert summary["teardown"]["destroyed"] is False and "DependencyViolation" in summary["teardown"]["error"]


def test_a_name_collision_leaves_the_other_runs_stack_alone(project: Path, tmp_path: Path) -> None:
    backend = RecordingBackend(stacks={STACK: StackInfo(STACK, resource_count=9)})
    summary, _ = execute(project, backend, ScriptedChannel(), tmp_path)
    assert backend.ops() == ["create"]
    assert STACK in backend.stacks and summary["exitCode"] == 1 and "exists already" in summary["error"]


def test_signals_outside_the_guard_keep_their_previous_handlers() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with guard_signals() as guard:
        assert signal.getsignal(signal.SIGTERM) == guard.handle
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.parametrize(("signum", "forwarded"), [(signal.SIGTERM, [signal.SIGINT]), (signal.SIGINT, [])])
def test_a_signal_during_a_pulumi_operation_waits_for_it_and_cancels_it_gracefully(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signum: int, forwarded: list[int]
) -> None:
    sent: list[int] = []
    monkeypatch.setattr(signals, "forward_to_cli", sent.append)
    backend, channel = RecordingBackend(), ScriptedChannel()
    backend.hooks["up"] = send_self(signum)
    summary, _ = execute(project, backend, channel, tmp_path)
    # SIGTERM reaches the CLI as its graceful cancel; SIGINT already reached it with the process group.
    assert sent == forwarded
    # The interruption waited for the operation to return, then teardown ran; nothing was started after it.
    assert backend.ops() == ["create", "up", "outputs", "destroy", "remove"] and channel.calls == []
    assert summary["exitCode"] == 128 + signum


@pytest.mark.parametrize("sigint_at_launch", ["default", "ignored"])
def test_forward_to_cli_signals_only_pulumi_children(tmp_path: Path, sigint_at_launch: str) -> None:
    # A background launch (nohup make test &, setsid ... &, a CI runner) starts everything with SIGINT ignored,
    # and an ignored signal stays ignored across exec: a shell started that way cannot trap it. The real CLI is
    # started by the Automation API while guard_signals() has its handler installed, and a handled signal is
    # reset to its default at exec, so the CLI can receive SIGINT however gpulease itself was launched.
    marker = tmp_path / "got-int"
    script = tmp_path / "pulumi"
    script.write_text(f"#!/bin/sh\ntrap 'echo int > {marker}; exit 0' INT\nwhile true; do sleep 0.05; done\n")
    script.chmod(0o755)
    launched = signal.getsignal(signal.SIGINT)
    if sigint_at_launch == "ignored":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with guard_signals() as guard:
            guard.disarm()
            pulumi = subprocess.Popen([str(script)])
        other = subprocess.Popen(["sleep", "30"])
    finally:
        signal.signal(signal.SIGINT, launched)
    try:
        for _ in range(100):  # until the shell has installed its trap
            if Path(f"/proc/{pulumi.pid}/stat").exists() and "pulumi" in Path(f"/proc/{pulumi.pid}/stat").read_text():
                break
            time.sleep(0.02)
        time.sleep(0.2)
        signals.forward_to_cli(signal.SIGINT)
        assert pulumi.wait(timeout=10) == 0 and marker.read_text().strip() == "int"
        assert other.poll() is None, "a process that is not the Pulumi CLI is left alone"
    finally:
        for proc in (pulumi, other):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


VERIFY = {"command": "python train.py --max-steps 20", "maxMinutes": 20, "resumeCommand": "python train.py --resume"}


def test_with_verify_the_run_waits_for_it_and_a_failed_verification_tears_down_before_the_job(tmp_path: Path) -> None:
    project = make_project(tmp_path / "verified", spec=experiment(verify=VERIFY))
    backend, channel = RecordingBackend(), ScriptedChannel()
    summary, log = execute(project, backend, channel, tmp_path)
    assert [op for op, _ in channel.calls] == ["wait_ready", "wait_verify", "run", "download_artifacts"]
    assert channel.calls[1][1] == 60 * (20 + 10)  # maxMinutes and the slack for tmux and the copy
    assert "verify: verification PASSED" in log and summary["outcome"] == "succeeded"

    backend, channel = RecordingBackend(), ScriptedChannel()
    channel.fail["wait_verify"] = ChannelError("the verification failed on instance i-1: resume")
    summary, _ = execute(project, backend, channel, tmp_path)
    assert [op for op, _ in channel.calls] == ["wait_ready", "wait_verify"]
    assert summary["outcome"] == "failed" and summary["exitCode"] == 1
    assert "the verification failed on instance i-1: resume" in summary["error"]
    assert torn_down(backend)
