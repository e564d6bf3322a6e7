"""``BucketChannel.download_artifacts`` (``ephemeral run --artifacts-dir``) is not confined to
its folder: a key ``.../artifacts//abs/path`` becomes ``PurePosixPath('/abs/path')`` and ``root.joinpath`` lands on
the absolute path; a symlinked folder inside the destination is followed; an existing file is overwritten; two keys
(``a//b``, ``a/b``) land on one file silently; a hidden character (U+202E) is written raw."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from gpulease.ephemeral.channel import BucketChannel

JOB = "ci/_gpulease/jobs/j1/artifacts/"
OUTPUTS = {"checkpointUri": "s3://bkt/ci/"}


@pytest.fixture
def bucket():
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="bkt")
        yield client


def _pull(client, dest: Path) -> None:
    BucketChannel(client).download_artifacts(OUTPUTS, "j1", dest)  # refused artifacts are named, never raised


def test_an_absolute_key_never_writes_outside_the_folder(bucket, tmp_path: Path) -> None:
    dest = tmp_path / "art"
    dest.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("PRECIOUS")
    bucket.put_object(Bucket="bkt", Key=JOB + "/" + str(victim).lstrip("/"), Body=b"OWNED")
    _pull(bucket, dest)
    assert victim.read_text() == "PRECIOUS"


def test_a_symlinked_folder_inside_the_destination_is_not_followed(bucket, tmp_path: Path) -> None:
    dest, outside = tmp_path / "art", tmp_path / "outside"
    dest.mkdir()
    outside.mkdir()
    (dest / "sub").symlink_to(outside)
    bucket.put_object(Bucket="bkt", Key=JOB + "sub/x", Body=b"through-link")
    _pull(bucket, dest)
    assert list(outside.iterdir()) == []


def test_two_keys_never_land_on_one_file_and_hidden_names_are_refused(bucket, tmp_path: Path) -> None:
    dest = tmp_path / "art"
    dest.mkdir()
    for key, body in (("a//b", b"one"), ("a/b", b"two"), ("\u202egnp.exe", b"bidi")):
        bucket.put_object(Bucket="bkt", Key=JOB + key, Body=body)
    _pull(bucket, dest)
    assert not (dest / "\u202egnp.exe").exists()
    assert not (dest / "a" / "b").exists() or (dest / "a" / "b").read_bytes() == b"two"


def test_an_existing_local_file_is_not_overwritten_unasked(bucket, tmp_path: Path) -> None:
    dest = tmp_path / "art"
    dest.mkdir()
    (dest / "notes.txt").write_text("MINE")
    bucket.put_object(Bucket="bkt", Key=JOB + "notes.txt", Body=b"theirs")
    _pull(bucket, dest)
    assert (dest / "notes.txt").read_text() == "MINE"


def test_the_result_names_each_refused_artifact_and_why(bucket, tmp_path: Path) -> None:
    dest = tmp_path / "art"
    dest.mkdir()
    (dest / "notes.txt").write_text("MINE")
    for key in ("a//b", "\u202egnp.exe", "notes.txt", "ok.txt"):
        bucket.put_object(Bucket="bkt", Key=JOB + key, Body=b"x")
    got = BucketChannel(bucket).download_artifacts(OUTPUTS, "j1", dest)
    assert [p.name for p in got] == ["ok.txt"]
    refused = " | ".join(got.refused)
    assert len(got.refused) == 3
    assert "'a//b' (not in canonical form" in refused
    assert "'\\u202egnp.exe'" in refused and "\u202e" not in refused  # named escaped, never raw
    assert "'notes.txt' (a local file is already there" in refused
    assert not any(p.name.startswith(".gpulease-") for p in dest.iterdir())  # the private folder is gone
