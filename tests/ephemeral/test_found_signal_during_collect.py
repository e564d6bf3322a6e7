"""A SIGINT/SIGTERM (a cancelled workflow, Ctrl-C) that arrives while ``ephemeral run`` is downloading the
artifacts stops the collection, so not every artifact was collected: the teardown keeps the checkpoint bucket that
still holds their only copy (as for a failed download) and the summary names the collection as not finished."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.ephemeral.test_run import execute
from tests.support.ephemeral import RecordingBackend, ScriptedChannel, make_project, send_self


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_collection_keeps_the_bucket(project: Path, tmp_path: Path, signum: int) -> None:
    backend, channel = RecordingBackend(), ScriptedChannel()
    channel.hooks["download_artifacts"] = send_self(signum)
    summary, _ = execute(project, backend, channel, tmp_path)
    assert summary["exitCode"] == 128 + signum and summary["outcome"] == "interrupted"
    assert backend.kept_buckets == [("gpulease-bucket",)], (
        f"the bucket holding the artifacts not collected was destroyed: {backend.kept_buckets}")
    assert "remove" not in backend.ops() and summary["teardown"]["keptBuckets"] == ["gpulease-bucket"]
    assert summary["failedArtifacts"], "the interrupted collection is named as not finished"
