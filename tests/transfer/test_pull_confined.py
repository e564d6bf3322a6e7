"""``gpulease pull`` writes only inside ``--dest``: a symlink on the way (``dest/final -> elsewhere``), a symlink,
folder, FIFO or device where a file goes, or at the temporary name the SDK downloads to, is one clear error (exit 2)
and nothing is written outside; against moto's S3 on loopback."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from gpulease.cli import main
from gpulease.transfer.files import confined_target

STACK = "aws-prep-7b"
VICTIM = b"an ssh key that must survive\n"


@pytest.fixture
def bucket(aws) -> str:
    s3 = aws.client("s3")
    s3.create_bucket(Bucket="named-bucket")
    s3.put_object(Bucket="named-bucket", Key="final/model.safetensors", Body=b"weights" * 100)
    s3.put_object(Bucket="named-bucket", Key="logs/train.log", Body=b"step 1\n")
    return "named-bucket"


def pull(bucket: str, dest: Path) -> int:
    return main(["pull", STACK, "--bucket", bucket, "--dest", str(dest), "--json"])


def test_a_symlinked_folder_in_the_destination_is_not_written_through(bucket, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    outside = tmp_path / "dot-ssh"
    outside.mkdir()
    (outside / "model.safetensors").write_bytes(VICTIM)
    dest = tmp_path / "results"
    dest.mkdir()
    (dest / "final").symlink_to(outside)
    assert pull(bucket, dest) == 2
    err = capsys.readouterr().err
    assert f"object 'final/model.safetensors': {dest}/final is a symlink; refusing to write through it" in err
    assert (outside / "model.safetensors").read_bytes() == VICTIM and sorted(os.listdir(outside)) == ["model.safetensors"]


@pytest.mark.parametrize("make", ["symlink-to-file", "dev-zero", "fifo", "folder"])
def test_something_other_than_a_file_where_a_pulled_file_goes_is_refused(bucket, tmp_path, capsys, monkeypatch, make):
    monkeypatch.setenv("PATH", "/nonexistent")
    victim = tmp_path / "victim"
    victim.write_bytes(VICTIM)
    dest = tmp_path / "results"
    (dest / "logs").mkdir(parents=True)
    where = dest / "logs" / "train.log"
    {"symlink-to-file": lambda: where.symlink_to(victim), "dev-zero": lambda: where.symlink_to("/dev/zero"),
     "fifo": lambda: os.mkfifo(where), "folder": lambda: where.mkdir()}[make]()
    assert pull(bucket, dest) == 2
    found = {"symlink-to-file": "a symlink", "dev-zero": "a symlink", "fifo": "a FIFO", "folder": "a folder"}[make]
    assert f"{where} is {found} where a file goes; refusing it" in capsys.readouterr().err
    assert victim.read_bytes() == VICTIM


def test_the_sdks_temporary_name_is_checked_too(tmp_path: Path) -> None:
    (tmp_path / "final").mkdir()
    (tmp_path / "final" / "x.bin.temp").symlink_to("/dev/zero")
    with pytest.raises(Exception, match=r"x.bin.temp is a symlink where a file goes"):
        confined_target(tmp_path, "final/x.bin", "final/", (".temp",))
    assert confined_target(tmp_path, "final/x.bin", "final/")[1] is None
    (tmp_path / "final" / "x.bin").write_bytes(b"abc")
    assert confined_target(tmp_path, "final/x.bin", "final/") == (tmp_path / "final" / "x.bin", 3)


def test_a_symlink_swapped_in_while_the_object_downloads_is_not_written_through(bucket, tmp_path, capsys,
                                                                                monkeypatch):
    """The folder checked before the download becomes a symlink before the file is put in place."""
    from gpulease.transfer.s3 import S3Store

    monkeypatch.setenv("PATH", "/nonexistent")
    outside = tmp_path / "dot-ssh"
    outside.mkdir()
    (outside / "model.safetensors").write_bytes(VICTIM)
    dest = tmp_path / "results"
    real = S3Store.download

    def swapping(self, key, target, progress):
        real(self, key, target, progress)
        if key == "final/model.safetensors":
            (dest / "final").rename(tmp_path / "final-moved")
            (dest / "final").symlink_to(outside)

    monkeypatch.setattr(S3Store, "download", swapping)
    assert pull(bucket, dest) == 2
    assert f"{dest}/final is a symlink; refusing to write through it" in capsys.readouterr().err
    assert (outside / "model.safetensors").read_bytes() == VICTIM and sorted(os.listdir(outside)) == ["model.safetensors"]
    assert not [p for p in dest.iterdir() if p.name.startswith(".gpulease-pull-")]  # the private folder is gone


@pytest.mark.parametrize("make", ["file", "fifo", "dev-null"])
def test_a_destination_that_exists_and_is_not_a_folder_is_one_line(bucket, tmp_path, capsys, monkeypatch, make):
    monkeypatch.setenv("PATH", "/nonexistent")
    dest = Path("/dev/null") if make == "dev-null" else tmp_path / "results"
    if make == "file":
        dest.write_bytes(VICTIM)
    elif make == "fifo":
        os.mkfifo(dest)
    assert main(["pull", STACK, "--bucket", bucket, "--dest", str(dest)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"gpulease: --dest {str(dest)!r}: exists and is not a folder; accepted: a folder, or a name not yet "
                   "taken"]
    if make == "file":
        assert dest.read_bytes() == VICTIM


class NamedStore:
    """Objects whose names hold a control or format character, beside one that reads as written."""

    KEYS = ("final/ok.txt", "final/red\x1b[31m.txt", "final/cod.\u202etxt.exe", "final/two\nlines.txt",
            "final/trailing ")

    def page(self, prefix: str, token: str | None) -> tuple[list[tuple[str, int]], str | None]:
        return ([(k, 2) for k in self.KEYS if k.startswith(prefix)], None)

    def download(self, key: str, target: str, progress) -> None:
        Path(target).write_bytes(b"ok")
        progress(2)


def test_object_names_that_would_not_read_as_written_are_refused_by_name_escaped(tmp_path: Path) -> None:
    from rich.console import Console

    from gpulease.core.errors import UserError
    from gpulease.transfer.locate import StackBucket
    from gpulease.transfer.run import pull as pull_objects

    where = StackBucket(stack=STACK, cloud="aws", bucket="b12", region="us-west-2", found_by="--bucket")
    dest = tmp_path / "dest"
    with pytest.raises(UserError) as exc:
        pull_objects(where, NamedStore(), ["final/"], dest, Console(quiet=True), bar=False)
    message = str(exc.value)
    assert message.startswith("pull: refused 4 object(s) whose names cannot be written as they read: "
                              "'final/red\\x1b[31m.txt' (holds U+001B")
    assert "'final/cod.\\u202etxt.exe' (holds U+202E" in message and "'final/two\\nlines.txt' (holds U+000A" in message
    assert "'final/trailing ' (starts or ends with a space)" in message
    assert message.endswith(f"the other 1 are in {dest}; rename them in the bucket to pull them")
    assert message.isprintable() and "\x1b" not in message and "\u202e" not in message
    assert sorted(os.listdir(dest / "final")) == ["ok.txt"]


def test_a_symlink_swapped_in_after_the_folder_was_opened_is_bypassed(bucket, tmp_path, monkeypatch):
    """The folder is swapped for a symlink after pull opened it and checked the file's place: the file is moved in
    by the folder's descriptor, so it lands in the folder that was checked, never through the symlink."""
    from gpulease.transfer import files

    monkeypatch.setenv("PATH", "/nonexistent")
    outside = tmp_path / "dot-ssh"
    outside.mkdir()
    dest = tmp_path / "results"
    real = files._regular_or_absent

    def then_swapped(fd, name, key, shown):
        real(fd, name, key, shown)
        if key == "final/model.safetensors" and sys._getframe(1).f_code.co_name == "put_in_place":
            (dest / "final").rename(tmp_path / "final-moved")
            (dest / "final").symlink_to(outside)

    monkeypatch.setattr(files, "_regular_or_absent", then_swapped)
    pull(bucket, dest)
    assert os.listdir(outside) == []
    assert (tmp_path / "final-moved" / "model.safetensors").read_bytes() == b"weights" * 100
