"""A bucket holding both ``final/a`` and ``final/a/b`` (one name a file and a folder): the second is failed on its
own, naming both keys, and the rest of the pull arrives (exit 3, incomplete); against moto's S3 on loopback and the
loopback OSS server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from gpulease.cli import main
from gpulease.inventory.alicloud_clients import ENDPOINT_ENV
from gpulease.transfer import oss as oss_transfer
from gpulease.transfer.files import FileOrFolder
from tests.support.alicloud_inventory import offline_credentials
from tests.support.oss_objects import OssObjects, oss_objects_server

STACK = "aws-prep-7b"


@pytest.fixture
def bucket(aws) -> str:
    s3 = aws.client("s3")
    s3.create_bucket(Bucket="named-bucket")
    for key, body in (("final/a", b"file a\n"), ("final/a/b", b"file b\n"), ("final/c", b"file c\n")):
        s3.put_object(Bucket="named-bucket", Key=key, Body=body)
    return "named-bucket"


def test_a_key_that_is_a_file_and_a_folder_fails_alone_and_the_rest_arrives(bucket, tmp_path, capsys):
    dest = tmp_path / "out"
    code = main(["pull", STACK, "final/", "--bucket", bucket, "--dest", str(dest), "--json"])
    captured = capsys.readouterr()
    assert code == 3, captured.err
    assert (dest / "final" / "c").read_bytes() == b"file c\n"
    assert (dest / "final" / "a").read_bytes() == b"file a\n"
    doc = json.loads(captured.out)
    assert doc["received"] == ["final/a", "final/c"]
    assert [f["key"] for f in doc["failed"]] == ["final/a/b"]
    assert "'final/a'" in doc["failed"][0]["reason"]
    line = captured.err.strip()
    assert line.count("\n") == 0 and "'final/a/b'" in line and "'final/a'" in line and "incomplete" in line
    # Again: what arrived is skipped, the conflict is failed the same way, the file already there kept.
    code = main(["pull", STACK, "final/", "--bucket", bucket, "--dest", str(dest), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 3 and doc["skipped"] == ["final/a", "final/c"] and len(doc["failed"]) == 1
    assert (dest / "final" / "a").read_bytes() == b"file a\n"


def test_the_folder_listed_first_keeps_its_place() -> None:
    shapes = FileOrFolder()
    assert shapes.conflict("final/a/b") is None
    assert shapes.conflict("final/a-x") is None
    clash = shapes.conflict("final/a")
    assert clash is not None and "'final/a/b'" in clash
    assert shapes.conflict("final/a/c") is None
    assert "'final/a/b'" in (shapes.conflict("final/a/b/deeper") or "")  # final/a/b is a file


@pytest.fixture
def oss(monkeypatch: pytest.MonkeyPatch, tmp_path) -> Iterator[OssObjects]:
    offline_credentials(monkeypatch)
    monkeypatch.setenv("PATH", "/nonexistent")  # no Pulumi CLI: --bucket names the bucket anyway
    monkeypatch.setattr(oss_transfer, "CHECKPOINT_DIR", tmp_path / "checkpoints")
    with oss_objects_server() as server:
        monkeypatch.setenv(ENDPOINT_ENV, server.endpoint)
        server.buckets["ali-bucket"] = {key: (body, {}) for key, body in
                                        (("final/a", b"file a\n"), ("final/a/b", b"file b\n"), ("final/c", b"c\n"))}
        yield server


def test_the_same_on_oss(oss, tmp_path, capsys):
    dest = tmp_path / "out"
    code = main(["pull", "ali-prep-7b", "final/", "--bucket", "ali-bucket", "--dest", str(dest), "--json"])
    captured = capsys.readouterr()
    assert code == 3, captured.err
    doc = json.loads(captured.out)
    assert sorted(doc["received"]) == ["final/a", "final/c"] and (dest / "final" / "c").read_bytes() == b"c\n"
    assert [f["key"] for f in doc["failed"]] == ["final/a/b"] and "'final/a'" in doc["failed"][0]["reason"]
