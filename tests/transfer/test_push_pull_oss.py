"""``gpulease push`` and ``pull`` on an Alibaba Cloud stack, through the OSS SDK v2's Uploader / Downloader against a
loopback OSS object server: multipart with a checkpoint, and a push cut in the middle that resumes with the parts
not yet sent (the parts already there are not sent again)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from gpulease.cli import main
from gpulease.inventory.alicloud_clients import ENDPOINT_ENV
from gpulease.transfer import oss as oss_transfer
from gpulease.transfer.files import MTIME_KEY
from tests.support.alicloud_inventory import offline_credentials
from tests.support.oss_objects import OssObjects, oss_objects_server

STACK = "ali-prep-7b"
BUCKET = "ali-bucket"
PART = 100 * 1024  # OSS's smallest part


@pytest.fixture
def oss(monkeypatch: pytest.MonkeyPatch, tmp_path) -> Iterator[OssObjects]:
    offline_credentials(monkeypatch)
    monkeypatch.setenv("PATH", "/nonexistent")  # no Pulumi CLI: --bucket names the bucket anyway
    monkeypatch.setattr(oss_transfer, "PART_SIZE", PART)
    monkeypatch.setattr(oss_transfer, "CHECKPOINT_DIR", tmp_path / "checkpoints")
    with oss_objects_server() as server:
        monkeypatch.setenv(ENDPOINT_ENV, server.endpoint)
        server.buckets[BUCKET] = {}
        yield server


def _parts(server: OssObjects) -> list[int]:
    return sorted(n for op, n in server.calls if op == "UploadPart" and n is not None)


def test_a_cut_push_resumes_from_the_checkpoint_without_sending_parts_again(oss, tmp_path, capsys):
    data = os.urandom(4 * PART + 1234)  # five parts
    (tmp_path / "shard.bin").write_bytes(data)
    argv = ["push", STACK, str(tmp_path / "shard.bin"), "--bucket", BUCKET, "--to", "data/raw", "--json"]
    oss.cut_part = 3
    assert main(argv) == 2  # one message: the bucket, what failed, and that running it again resumes
    err = capsys.readouterr().err
    assert f"bucket {BUCKET}:" in err and "Run the same command again to resume" in err
    assert BUCKET in oss.buckets and "data/raw/shard.bin" not in oss.buckets[BUCKET]
    sent_before = _parts(oss)
    assert 1 in sent_before and 3 in sent_before
    assert list((tmp_path / "checkpoints").iterdir()), "the SDK recorded its checkpoint"

    oss.cut_part = None
    oss.calls.clear()
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["sent"] == ["data/raw/shard.bin"] and result["uri"] == f"oss://{BUCKET}/data/raw/"
    assert 1 not in _parts(oss) and 2 not in _parts(oss) and 3 in _parts(oss)  # resumed at part 3
    stored, meta = oss.buckets[BUCKET]["data/raw/shard.bin"]
    assert stored == data and meta[MTIME_KEY] == str(int((tmp_path / "shard.bin").stat().st_mtime))

    # Again: already there (size and recorded modification time), nothing sent.
    oss.calls.clear()
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["skipped"] == ["data/raw/shard.bin"]
    assert _parts(oss) == [] and ("PutObject", None) not in oss.calls


def test_pull_downloads_with_the_downloader_and_skips_what_is_here(oss, tmp_path, capsys):
    big = os.urandom(3 * PART + 7)
    oss.buckets[BUCKET]["final/model.bin"] = (big, {})
    oss.buckets[BUCKET]["logs/train.log"] = (b"step 1\n", {})
    oss.buckets[BUCKET]["raw/x"] = (b"not pulled", {})
    dest = tmp_path / "out"
    argv = ["pull", STACK, "--bucket", BUCKET, "--dest", str(dest), "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert sorted(result["received"]) == ["final/model.bin", "logs/train.log"]
    assert (dest / "final" / "model.bin").read_bytes() == big and not (dest / "raw").exists()
    assert sum(1 for op, _ in oss.calls if op == "GetObject") >= 4  # the big one in ranged parts
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["received"] == []


def test_a_listing_truncated_without_a_token_fails_the_pull_instead_of_missing_objects(oss, tmp_path, capsys):
    for name in ("a", "b", "c"):
        oss.buckets[BUCKET][f"final/{name}.bin"] = (name.encode() * 10, {})
    oss.truncated_without_token = True
    dest = tmp_path / "out"
    assert main(["pull", STACK, "--bucket", BUCKET, "--dest", str(dest), "--json"]) == 2
    err = capsys.readouterr().err
    assert (f"bucket {BUCKET}: the listing under 'final/' says it is truncated but gives no NextContinuationToken; "
            "refusing to take it as complete") in err
