"""Keys a pull cannot write as they read are refused by name and the rest pulled: a key not in canonical form
(``final//a``, ``final/./a``: it would land on ``final/a``'s file), a name longer than 255 bytes, a path longer
than 4096; a push of something that is not a regular file or folder is refused, and inside a folder such entries
are named, never skipped silently; a --to longer than an object key may be is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rich.console import Console

from gpulease.core.errors import UserError
from gpulease.transfer.files import key_prefix, local_files
from gpulease.transfer.locate import StackBucket
from gpulease.transfer.run import pull, push

WHERE = StackBucket(stack="s", cloud="aws", bucket="b12", region="us-west-2", found_by="--bucket")


class Store:
    def __init__(self, keys: list[tuple[str, int]]) -> None:
        self.keys = keys
        self.uploaded: list[str] = []

    def page(self, prefix: str, token: str | None):
        return [(k, s) for k, s in self.keys if k.startswith(prefix)], None

    def download(self, key: str, target: str, progress) -> None:
        size = dict(self.keys)[key]
        Path(target).write_bytes(b"x" * size)
        progress(size)

    def already_there(self, f) -> bool:
        return False

    def upload(self, f, progress) -> None:
        self.uploaded.append(f.key)


def pulled(tmp_path: Path, keys: list[tuple[str, int]]) -> tuple[str, Path]:
    dest = tmp_path / "dest"
    with pytest.raises(UserError) as err:
        pull(WHERE, Store(keys), ["final/"], dest, Console(quiet=True), bar=False)
    return str(err.value), dest


@pytest.mark.parametrize("other", ["final//a", "final/./a"])
def test_a_key_not_in_canonical_form_is_refused_and_never_lands_on_anothers_file(tmp_path: Path, other: str) -> None:
    message, dest = pulled(tmp_path, [("final/a", 3), (other, 7), ("final/b", 1)])
    assert f"{other!r} (not in canonical form" in message
    assert message.endswith(f"the other 2 are in {dest}; rename them in the bucket to pull them")
    assert (dest / "final" / "a").read_bytes() == b"xxx" and (dest / "final" / "b").stat().st_size == 1


def test_a_name_longer_than_the_file_system_takes_is_refused_and_the_rest_pulled(tmp_path: Path) -> None:
    long = "final/" + "a" * 300
    message, dest = pulled(tmp_path, [(long, 3), ("final/" + "d" * 300 + "/x", 2), ("final/b", 1)])
    assert f"{long!r} (a name of 300 bytes with the download's suffix; at most 255" in message
    assert "refused 2 object(s)" in message and "Traceback" not in message
    assert os.listdir(dest / "final") == ["b"]


def test_a_path_longer_than_the_kernel_takes_is_refused(tmp_path: Path) -> None:
    deep = "final/" + "/".join(["d"] * 2100) + "/x"
    message, dest = pulled(tmp_path, [(deep, 1), ("final/b", 1)])
    assert "(the local path would be" in message and "at most 4096)" in message
    assert os.listdir(dest / "final") == ["b"]


def test_a_key_that_leaves_the_destination_is_refused_and_the_rest_pulled(tmp_path: Path) -> None:
    message, dest = pulled(tmp_path, [("final/../x", 3), ("final/z", 1)])
    assert "'final/../x' (leaves the destination folder)" in message
    assert os.listdir(dest / "final") == ["z"] and not (dest / "x").exists()


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "broken"])
def test_a_top_level_path_that_is_not_a_regular_file_or_folder_is_refused(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "thing"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.symlink_to(tmp_path / "gone")
    store = Store([])
    with pytest.raises(UserError) as err:
        push(WHERE, store, path, "data/raw", Console(quiet=True), bar=False)
    assert str(err.value).startswith(f"{path}: ") and "accepted: a regular file or a folder" in str(err.value)
    assert store.uploaded == []


def test_entries_inside_a_folder_that_are_not_files_are_named_not_skipped_silently(tmp_path: Path) -> None:
    folder = tmp_path / "ds"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("a")
    os.mkfifo(folder / "sub" / "pipe")
    (folder / "zero").symlink_to("/dev/zero")
    store = Store([])
    console = Console(record=True, width=300, file=open(os.devnull, "w"))  # noqa: SIM115 - closed with the test
    result = push(WHERE, store, folder, "data/raw", console, bar=False)
    assert store.uploaded == ["data/raw/a.txt"]
    assert result["leftOutCount"] == 2 and result["leftOut"] == ["sub/pipe (a FIFO)", "zero (a symlink to a device)"]
    assert ("push: left out 2 entries that are not a regular file or folder inside it: sub/pipe (a FIFO), "
            "zero (a symlink to a device)") in console.export_text()


def test_the_left_out_list_is_bounded(tmp_path: Path) -> None:
    for i in range(25):
        os.mkfifo(tmp_path / f"p{i:02d}")
    left: list[str] = []
    assert local_files(tmp_path, "data/", left) == [] and len(left) == 25
    result = push(WHERE, Store([]), tmp_path, "data", Console(quiet=True), bar=False)
    assert result["leftOutCount"] == 25 and len(result["leftOut"]) == 10


def test_a_to_longer_than_an_object_key_may_be_is_refused() -> None:
    with pytest.raises(UserError, match=r"2001 bytes as a key prefix; object keys are at most 1023 bytes"):
        key_prefix("a" * 2000)
    long_prefix = "/".join(["a" * 249] * 4)  # 999 bytes of folder names pull can write (each at most 255)
    assert key_prefix(long_prefix) == long_prefix + "/"


def test_a_second_key_landing_on_a_chosen_file_is_refused_naming_both(tmp_path: Path, monkeypatch) -> None:
    # Two canonical keys land on one file where the file system folds case (os.path.normcase says so there).
    monkeypatch.setattr(os.path, "normcase", str.lower)
    message, dest = pulled(tmp_path, [("final/Model.pt", 3), ("final/model.pt", 7)])
    assert "'final/model.pt' (lands on the same file as 'final/Model.pt')" in message
    assert (dest / "final" / "Model.pt").read_bytes() == b"xxx" and not (dest / "final" / "model.pt").exists()
