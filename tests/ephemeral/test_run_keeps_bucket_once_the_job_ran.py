"""``ephemeral run`` keeps the checkpoint bucket whenever the job ran (its command was started) and its artifacts
were not all collected: a SIGINT/SIGTERM (a cancelled workflow, Ctrl-C) during the collection or before it (during
the job), a job whose result never came. The collection is then named as not finished. A job that never started
(up failed, the instance never became ready) left nothing of its own in the bucket: everything is destroyed."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from gpulease.ephemeral.channel import ChannelError
from tests.ephemeral.test_run import execute, torn_down
from tests.support.ephemeral import RecordingBackend, ScriptedChannel, make_project, send_self


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


def _kept(backend: RecordingBackend, summary: dict) -> None:
    assert backend.kept_buckets == [("gpulease-bucket",)], (
        f"the bucket holding the artifacts not collected was destroyed: {backend.kept_buckets}")
    assert "remove" not in backend.ops() and summary["teardown"]["keptBuckets"] == ["gpulease-bucket"]
    assert summary["failedArtifacts"], "the collection is named as not finished"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_collection_keeps_the_bucket(project: Path, tmp_path: Path, signum: int) -> None:
    backend, channel = RecordingBackend(), ScriptedChannel()
    channel.hooks["download_artifacts"] = send_self(signum)
    summary, _ = execute(project, backend, channel, tmp_path)
    assert summary["exitCode"] == 128 + signum and summary["outcome"] == "interrupted"
    _kept(backend, summary)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_job_keeps_the_bucket(project: Path, tmp_path: Path, signum: int) -> None:
    backend, channel = RecordingBackend(), ScriptedChannel()
    channel.hooks["run"] = send_self(signum)
    summary, _ = execute(project, backend, channel, tmp_path)
    assert summary["exitCode"] == 128 + signum and summary["outcome"] == "interrupted"
    assert ("download_artifacts", str(tmp_path / "art")) in channel.calls, "what is there is still collected"
    _kept(backend, summary)
    assert any("did not finish" in f for f in summary["failedArtifacts"])


def test_a_job_whose_result_never_came_keeps_the_bucket(project: Path, tmp_path: Path) -> None:
    backend, channel = RecordingBackend(), ScriptedChannel()
    channel.fail["run"] = ChannelError("no result before the deadline")
    summary, _ = execute(project, backend, channel, tmp_path)
    assert summary["exitCode"] == 1 and summary["failedStep"] == "train"
    _kept(backend, summary)


@pytest.mark.parametrize(("side", "op"), [("backend", "up"), ("channel", "wait_ready")])
def test_a_signal_before_the_job_started_destroys_everything(project: Path, tmp_path: Path, side: str, op: str) -> None:
    backend, channel = RecordingBackend(), ScriptedChannel()
    (backend if side == "backend" else channel).hooks[op] = send_self(signal.SIGINT)
    summary, _ = execute(project, backend, channel, tmp_path)
    assert summary["exitCode"] == 130 and torn_down(backend) and backend.kept_buckets == [()]


def test_a_job_that_finished_and_was_all_collected_destroys_everything(project: Path, tmp_path: Path) -> None:
    backend = RecordingBackend()
    summary, _ = execute(project, backend, ScriptedChannel(), tmp_path)
    assert summary["exitCode"] == 0 and torn_down(backend) and backend.kept_buckets == [()]
    assert summary["failedArtifacts"] == []
