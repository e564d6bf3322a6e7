"""Artifacts are collected within a count, a total size and a deadline; the rest is named, not collected."""

from __future__ import annotations

from pathlib import Path

import boto3
from moto import mock_aws

from gpulease.ephemeral.artifact_bounds import ArtifactBounds
from gpulease.ephemeral.channel import BucketChannel

JOB = "ci/_gpulease/jobs/j1/artifacts/"
OUTPUTS = {"checkpointUri": "s3://bkt/ci/"}


def _bucket(sizes: dict[str, int]):
    client = boto3.client("s3", region_name="us-east-1")
    client.create_bucket(Bucket="bkt")
    for key, size in sizes.items():
        client.put_object(Bucket="bkt", Key=JOB + key, Body=b"x" * size)
    return client


def test_beyond_the_count_the_rest_is_named_not_collected(tmp_path: Path) -> None:
    with mock_aws():
        client = _bucket({f"{i}.txt": 1 for i in range(5)})
        got = BucketChannel(client).download_artifacts(OUTPUTS, "j1", tmp_path / "art", ArtifactBounds(max_objects=2))
    assert sorted(p.name for p in got) == ["0.txt", "1.txt"]
    assert len(got.failed) == 2 and "--max-artifacts 2" in got.failed[0]
    assert not (tmp_path / "art" / "4.txt").exists()


def test_beyond_the_total_size_the_object_is_named_not_collected(tmp_path: Path) -> None:
    with mock_aws():
        client = _bucket({"a.bin": 10, "big.bin": 100, "c.bin": 10})
        got = BucketChannel(client).download_artifacts(OUTPUTS, "j1", tmp_path / "art", ArtifactBounds(max_bytes=50))
    assert sorted(p.name for p in got) == ["a.bin", "c.bin"]
    assert [f for f in got.failed if "big.bin" in f and "--max-artifacts-gib" in f]


def test_past_the_deadline_no_further_object_is_fetched(tmp_path: Path) -> None:
    first = tmp_path / "art" / "a.txt"  # the clock passes the deadline once the first object is down, however
    with mock_aws():                    # often the collect step reads it
        client = _bucket({"a.txt": 1, "b.txt": 1, "c.txt": 1})
        bounds = ArtifactBounds(seconds=60, clock=lambda: 100.0 if first.exists() else 0.0)
        got = BucketChannel(client).download_artifacts(OUTPUTS, "j1", tmp_path / "art", bounds)
    assert [p.name for p in got] == ["a.txt"]
    assert len(got.failed) == 2 and all("collect deadline" in f for f in got.failed)


def test_the_flags_reach_the_bounds() -> None:
    from gpulease.cli.main import build_parser
    args = build_parser().parse_args(["ephemeral", "run", "--base-stack", "b", "--max-artifacts", "3",
                                      "--max-artifacts-gib", "0.5", "--collect-minutes", "2", "--", "true"])
    from gpulease.ephemeral.artifact_bounds import from_args
    bounds = from_args(args)
    assert (bounds.max_objects, bounds.max_bytes, bounds.seconds) == (3, 512 * 1024**2, 120)
