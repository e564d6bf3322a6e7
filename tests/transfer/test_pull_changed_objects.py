"""``gpulease pull`` skips a local file only when it is known to hold the object's bytes: an object replaced by
another of the same size is fetched again (single-part and multipart ETags), a local file that differs and that no
earlier pull wrote is kept and named (exit 2), and the pull's record is never followed through a link; against
moto's S3 on loopback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from gpulease.cli import main
from gpulease.core.errors import UserError
from gpulease.transfer import s3 as s3_transfer
from gpulease.transfer.locate import StackBucket
from gpulease.transfer.pulled import RECORD_NAME, md5_of_tag
from gpulease.transfer.run import pull as pull_objects

STACK = "aws-prep-7b"
BUCKET = "named-bucket"
KEY = "final/model.bin"


@pytest.fixture
def s3(aws, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    client = aws.client("s3")
    client.create_bucket(Bucket=BUCKET)
    return client


def _multipart(s3, key: str, body: bytes) -> str:
    """One object written by a multipart upload (one part: the last part may be small): an ETag ``…-1``."""
    upload = s3.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
    part = s3.upload_part(Bucket=BUCKET, Key=key, UploadId=upload, PartNumber=1, Body=body)
    s3.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=upload,
                                 MultipartUpload={"Parts": [{"ETag": part["ETag"], "PartNumber": 1}]})
    return s3.head_object(Bucket=BUCKET, Key=key)["ETag"]


def _pull(dest: Path, capsys) -> tuple[int, dict | str]:
    code = main(["pull", STACK, "final/", "--bucket", BUCKET, "--dest", str(dest), "--json"])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if code == 0 else captured.err)


@pytest.fixture
def no_download(monkeypatch):
    """Fail any download: what the pull then skips, it skipped without fetching."""
    def refuse(self, key, target, progress):
        raise AssertionError(f"{key} was fetched")
    return lambda: monkeypatch.setattr(s3_transfer.S3Store, "download", refuse)


@pytest.mark.parametrize("write", ["single-part", "multipart"])
def test_an_object_replaced_by_another_of_the_same_size_is_fetched_again(s3, tmp_path, capsys, write):
    put = (lambda body: s3.put_object(Bucket=BUCKET, Key=KEY, Body=body)) if write == "single-part" else \
        (lambda body: _multipart(s3, KEY, body))
    dest = tmp_path / "results"
    put(b"first version.")
    assert _pull(dest, capsys)[1]["received"] == [KEY]
    put(b"other version.")  # the same 14 bytes
    code, result = _pull(dest, capsys)
    assert code == 0 and result["received"] == [KEY], result
    assert (dest / KEY).read_bytes() == b"other version."


def test_an_unchanged_object_is_skipped_by_the_record_without_fetching(s3, tmp_path, capsys, no_download):
    tag = _multipart(s3, KEY, b"weights" * 10)
    assert md5_of_tag(tag) is None  # a multipart ETag: only the record can say the local file is the same
    dest = tmp_path / "results"
    assert _pull(dest, capsys)[1]["received"] == [KEY]
    no_download()
    code, result = _pull(dest, capsys)
    assert code == 0 and result["skipped"] == [KEY]


def test_a_local_copy_with_the_same_bytes_and_no_record_is_compared_then_recorded(s3, tmp_path, capsys, no_download,
                                                                                  monkeypatch):
    _multipart(s3, KEY, b"same bytes")
    dest = tmp_path / "results"
    (dest / "final").mkdir(parents=True)
    (dest / KEY).write_bytes(b"same bytes")
    code, result = _pull(dest, capsys)  # fetched once to compare: the same, left as it is
    assert code == 0 and result["skipped"] == [KEY] and result["received"] == []
    no_download()
    assert _pull(dest, capsys)[1]["skipped"] == [KEY]  # now the record vouches


def test_a_single_part_etag_equal_to_the_local_md5_skips_without_fetching(s3, tmp_path, capsys, no_download):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=b"same bytes")
    dest = tmp_path / "results"
    (dest / "final").mkdir(parents=True)
    (dest / KEY).write_bytes(b"same bytes")
    no_download()
    code, result = _pull(dest, capsys)
    assert code == 0 and result["skipped"] == [KEY]


@pytest.mark.parametrize("local", [b"MY OWN NOTES", b"my own, longer notes that are not the object"])
@pytest.mark.parametrize("write", ["single-part", "multipart"])
def test_a_local_file_that_differs_and_no_pull_wrote_is_kept_and_named(s3, tmp_path, capsys, local, write):
    if write == "single-part":
        s3.put_object(Bucket=BUCKET, Key=KEY, Body=b"the object..")
    else:
        _multipart(s3, KEY, b"the object..")
    dest = tmp_path / "results"
    (dest / "final").mkdir(parents=True)
    (dest / KEY).write_bytes(local)
    code, err = _pull(dest, capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "kept 1 local file(s) that differ from the bucket's object" in err and repr(KEY) in err
    assert (dest / KEY).read_bytes() == local
    assert sorted(p.name for p in (dest / "final").iterdir()) == ["model.bin"]  # the download was dropped


def test_a_pulled_file_edited_here_is_not_replaced_by_a_changed_object(s3, tmp_path, capsys):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=b"version one")
    dest = tmp_path / "results"
    assert _pull(dest, capsys)[0] == 0
    (dest / KEY).write_bytes(b"edited here, longer")
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=b"version two")
    code, err = _pull(dest, capsys)
    assert code == 2 and "kept 1 local file(s)" in err
    assert (dest / KEY).read_bytes() == b"edited here, longer"


def test_the_record_is_never_written_through_a_link_and_a_foreign_record_vouches_for_nothing(s3, tmp_path, capsys):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=b"the object")
    dest = tmp_path / "results"
    (dest / "final").mkdir(parents=True)
    (dest / KEY).write_bytes(b"different!")  # same size as the object
    victim = tmp_path / "victim.json"
    st = (dest / KEY).stat()
    forged = {"version": 1, "objects": {KEY: {"bucket": BUCKET, "size": 10, "tag": None, "localSize": st.st_size,
                                              "localMtimeNs": st.st_mtime_ns}}}
    victim.write_text(json.dumps(forged))
    (dest / RECORD_NAME).symlink_to(victim)
    code, err = _pull(dest, capsys)
    assert code == 2 and "kept 1 local file(s)" in err  # the linked record was not read
    assert json.loads(victim.read_text()) == forged
    assert not (dest / RECORD_NAME).is_symlink()


class OneObject:
    def page(self, prefix, token):
        return ([("final/Pulumi.s.yaml", 5, None)], None)

    def download(self, key, target, progress):
        Path(target).write_bytes(b"xxxxx")


@pytest.mark.parametrize("link", ["same", "symlink", "hardlink"])
def test_an_object_that_would_land_on_a_file_the_pull_read_is_refused(tmp_path, link):
    dest = tmp_path / "dest"
    (dest / "final").mkdir(parents=True)
    stack_file = tmp_path / "Pulumi.s.yaml"
    stack_file.write_text("config: {}\n")
    landing = dest / "final" / "Pulumi.s.yaml"
    if link == "same":
        stack_file = landing
        stack_file.write_text("config: {}\n")
    elif link == "symlink":
        landing.symlink_to(stack_file)
    else:
        landing.hardlink_to(stack_file)
    where = StackBucket(STACK, "aws", "us-west-2", "b12", "--bucket", reads=(stack_file,))
    with pytest.raises(UserError, match=r"lands on .*Pulumi\.s\.yaml, a file this command reads"):
        pull_objects(where, OneObject(), ["final/"], dest, Console(quiet=True), bar=False)
    assert stack_file.read_text() == "config: {}\n"


def test_the_stack_file_and_the_project_file_are_what_a_pull_reads(s3):
    from gpulease.transfer.locate import locate

    where = locate(STACK, bucket=BUCKET)
    assert {p.name for p in where.reads} >= {f"Pulumi.{STACK}.yaml", "Pulumi.yaml"}


class StackFiles:
    def page(self, prefix, token):
        return ([("stacks/Pulumi.other.yaml", 9, None), ("stacks/notes.txt", 5, None)], None)

    def download(self, key, target, progress):
        Path(target).write_bytes(b"config: 1" if key.endswith(".yaml") else b"notes")


def test_a_pull_into_the_project_never_adds_a_stack_file_to_it(tmp_path):
    project = tmp_path / "proj"
    (project / "stacks").mkdir(parents=True)
    (project / "Pulumi.yaml").write_text("name: x\nstackConfigDir: stacks\n")
    stack_file = project / "stacks" / "Pulumi.s.yaml"
    stack_file.write_text("config: {}\n")
    where = StackBucket(STACK, "aws", "us-west-2", "b12", "--bucket", reads=(stack_file, project / "Pulumi.yaml"))
    with pytest.raises(UserError, match=r"'stacks/Pulumi.other.yaml' \(would be a stack file in .*stacks, beside"):
        pull_objects(where, StackFiles(), ["stacks/"], project, Console(quiet=True), bar=False)
    assert not (project / "stacks" / "Pulumi.other.yaml").exists()
    assert (project / "stacks" / "notes.txt").read_bytes() == b"notes"  # the rest arrives
