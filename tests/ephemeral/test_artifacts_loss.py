"""Issue 23, round 2: artifacts collection (write_confined)."""

from __future__ import annotations

from pathlib import Path

import boto3
from moto import mock_aws

from gpulease.ephemeral.channel import BucketChannel
from gpulease.transfer.files import write_confined

JOB = "ci/_gpulease/jobs/j1/artifacts/"
OUTPUTS = {"checkpointUri": "s3://bkt/ci/"}


def test_a_file_that_appears_during_the_download_is_never_overwritten(tmp_path: Path) -> None:
    dest = tmp_path / "art"

    def fetch(name: str, path: str) -> None:
        (dest / name).write_text("MINE")  # another run / the user writes it while the object downloads
        Path(path).write_text("theirs")

    write_confined(dest, ["model.pt"], "p/", fetch)
    assert (dest / "model.pt").read_text() == "MINE"  # put_in_place's os.rename replaces it


def test_one_object_that_fails_does_not_abandon_the_rest(tmp_path: Path) -> None:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="bkt")
        for key in ("a.txt", "b.txt", "c.txt"):
            client.put_object(Bucket="bkt", Key=JOB + key, Body=b"x")
        real = client.download_file

        def flaky(bucket, key, path, **kw):
            if key.endswith("b.txt"):
                client.delete_object(Bucket=bucket, Key=key)  # or a 5xx after retries, ENOSPC, ...
            return real(bucket, key, path, **kw)

        client.download_file = flaky
        dest = tmp_path / "art"
        try:
            got = BucketChannel(client).download_artifacts(OUTPUTS, "j1", dest)
        except Exception:
            got = None
        assert (dest / "c.txt").exists()  # the ephemeral stack (and its bucket) is destroyed right after
        assert got is not None and any("b.txt" in r for r in got.refused)
