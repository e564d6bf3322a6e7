"""Artifacts not collected: the run says so (exit 3) and the bucket that holds them outlives the instance."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.ephemeral.backend import all_but_buckets
from gpulease.ephemeral.orchestrator import EXIT_INCOMPLETE
from tests.ephemeral.test_run import execute
from tests.support.ephemeral import RecordingBackend, ScriptedChannel, make_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


def test_a_failed_artifact_keeps_the_bucket_and_exits_incomplete(project: Path, tmp_path: Path) -> None:
    backend, channel = RecordingBackend(), ScriptedChannel(failed_artifacts=["b.txt"])
    summary, log = execute(project, backend, channel, tmp_path)
    assert summary["exitCode"] == EXIT_INCOMPLETE and summary["outcome"] == "artifacts-incomplete"
    assert any("b.txt" in f for f in summary["failedArtifacts"])
    assert backend.kept_buckets == [("gpulease-bucket",)]  # the instance is destroyed, the bucket is not
    assert "remove" not in backend.ops() and summary["teardown"]["keptBuckets"] == ["gpulease-bucket"]
    assert "kept bucket gpulease-bucket" in log


def test_a_refused_artifact_keeps_the_bucket_and_exits_incomplete(project: Path, tmp_path: Path) -> None:
    """An artifact refused locally (it would replace a file already there, or its name does not read as itself)
    was never written: the bucket still holds its only copy, so it is kept, and the run is incomplete."""
    backend, channel = RecordingBackend(), ScriptedChannel(refused_artifacts=["notes.txt"])
    summary, _ = execute(project, backend, channel, tmp_path)
    assert summary["exitCode"] == EXIT_INCOMPLETE and summary["outcome"] == "artifacts-incomplete"
    assert backend.kept_buckets == [("gpulease-bucket",)] and "remove" not in backend.ops()
    assert any("notes.txt" in r for r in summary["refusedArtifacts"])


def test_all_collected_destroys_everything(project: Path, tmp_path: Path) -> None:
    backend, channel = RecordingBackend(), ScriptedChannel()
    summary, _ = execute(project, backend, channel, tmp_path)
    assert backend.kept_buckets == [()] and backend.ops()[-1] == "remove" and summary["exitCode"] == 0


def test_the_kept_bucket_keeps_what_it_needs_and_nothing_else() -> None:
    p = "urn:pulumi:s::gpulease::"
    resources = [
        {"urn": p + "pulumi:pulumi:Stack::s", "type": "pulumi:pulumi:Stack"},
        {"urn": p + "pulumi:providers:aws::default", "type": "pulumi:providers:aws"},
        {"urn": p + "gpulease:x:Storage::st", "type": "gpulease:x:Storage"},
        {"urn": p + "aws:kms/key:Key::k", "type": "aws:kms/key:Key"},
        {"urn": p + "aws:s3/bucket:Bucket::b", "type": "aws:s3/bucket:Bucket", "outputs": {"bucket": "bkt"},
         "parent": p + "gpulease:x:Storage::st", "dependencies": [p + "aws:kms/key:Key::k"],
         "provider": p + "pulumi:providers:aws::default::0000"},
        {"urn": p + "aws:s3/bucket:Bucket::other", "type": "aws:s3/bucket:Bucket", "outputs": {"bucket": "tools"}},
        {"urn": p + "aws:ec2/instance:Instance::i", "type": "aws:ec2/instance:Instance"},
    ]
    assert all_but_buckets(resources, ("bkt",)) == [p + "aws:s3/bucket:Bucket::other", p + "aws:ec2/instance:Instance::i"]


def test_a_bucket_the_state_does_not_hold_is_never_a_reason_to_keep_anything() -> None:
    assert all_but_buckets([{"urn": "u", "type": "aws:ec2/instance:Instance"}], ("bkt",)) == ["u"]


@pytest.mark.parametrize("kind", ["aws:s3/bucketV3:BucketV3", "alicloud:oss/bucketV2:BucketV2"])
def test_a_bucket_held_under_a_type_not_known_as_a_bucket_is_never_guessed(kind: str) -> None:
    resources = [{"urn": "b", "type": kind, "outputs": {"bucket": "bkt"}}, {"urn": "u", "type": "aws:ec2/instance:Instance"}]
    with pytest.raises(RuntimeError, match="'bkt' is in the stack's state under a resource type not known"):
        all_but_buckets(resources, ("bkt",))


def test_a_collection_that_fails_whole_keeps_the_bucket(project: Path, tmp_path: Path) -> None:
    from gpulease.ephemeral.channel import ChannelError
    backend, channel = RecordingBackend(), ScriptedChannel()
    channel.fail["download_artifacts"] = ChannelError("download_artifacts broke")
    summary, _ = execute(project, backend, channel, tmp_path)
    assert summary["exitCode"] == 1 and summary["outcome"] == "failed" and "broke" in summary["error"]
    assert backend.kept_buckets == [("gpulease-bucket",)] and "remove" not in backend.ops()
    assert summary["failedArtifacts"] and summary["teardown"]["destroyed"] is True
