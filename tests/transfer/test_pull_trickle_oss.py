"""The pull's deadline holds inside one OSS read too: a loopback OSS object server that trickles an object's body a
byte at a time is cut off at the deadline (not after the OSS SDK's own read timeout), with the S3 path's one line."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from gpulease.core.errors import UserError
from gpulease.transfer import oss as oss_transfer
from gpulease.transfer.bounded import PullBounds
from gpulease.transfer.locate import StackBucket
from gpulease.transfer.run import pull
from tests.support.oss_objects import OssObjects, oss_objects_server

BUCKET = "ali-bucket"
WHERE = StackBucket(stack="ali-prep-7b", cloud="alicloud", bucket=BUCKET, region="cn-hangzhou", found_by="--bucket")


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[OssObjects]:
    monkeypatch.setattr(oss_transfer, "CHECKPOINT_DIR", tmp_path / "checkpoints")
    with oss_objects_server() as objects:
        objects.buckets[BUCKET] = {"final/model.bin": (b"x" * 200_000, {})}
        yield objects


def _store(objects: OssObjects) -> oss_transfer.OssStore:
    import alibabacloud_oss_v2 as oss

    config = oss.config.load_default()
    config.credentials_provider = oss.credentials.StaticCredentialsProvider("id", "secret")
    config.region, config.endpoint = "cn-hangzhou", objects.endpoint
    config.use_path_style = True
    config.readwrite_timeout = 60  # the SDK's own bound alone would let the trickle run for a minute per try
    return oss_transfer.OssStore(oss.Client(config), BUCKET, oss_transfer.CHECKPOINT_DIR)


def test_an_oss_object_that_trickles_is_cut_off_at_the_pulls_deadline(server: OssObjects, tmp_path: Path) -> None:
    server.trickle_seconds = 8
    outcome: dict[str, BaseException] = {}

    def run() -> None:
        try:
            pull(WHERE, _store(server), ["final/"], tmp_path / "dest", Console(quiet=True), bar=False,
                 limits=PullBounds(seconds=1))
        except BaseException as exc:
            outcome["error"] = exc

    start = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(15)  # a pull that is not cut off fails the test here instead of hanging it
    assert not thread.is_alive(), "the pull was not cut off at its deadline"
    assert 1 <= time.monotonic() - start < 4  # the trickle alone would take 8 s, the SDK's read timeout 60 s a try
    error = outcome.get("error")
    assert isinstance(error, UserError) and re.match(
        r"^pull: past the pull's deadline \(--deadline-seconds\) \(1 s\) while .*; the files received in full are "
        r"kept \(the one cut off is not\)", str(error)), error
    assert not (tmp_path / "dest" / "final" / "model.bin").exists()


def test_an_oss_pull_within_its_deadline_is_whole(server: OssObjects, tmp_path: Path) -> None:
    result = pull(WHERE, _store(server), ["final/"], tmp_path / "dest", Console(quiet=True), bar=False,
                  limits=PullBounds(seconds=60))
    assert result["received"] == ["final/model.bin"]
    assert (tmp_path / "dest" / "final" / "model.bin").read_bytes() == b"x" * 200_000
