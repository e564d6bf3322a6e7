"""push leaves out (and names) a symlink to a file outside the pushed folder: it never sends /etc/passwd."""

from __future__ import annotations

from pathlib import Path

from gpulease.transfer.files import local_files


def test_a_link_to_a_file_outside_is_left_out_and_named(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "a.txt").write_text("a")
    secret = tmp_path / "secret"
    secret.write_text("s")
    (folder / "leak").symlink_to(secret)
    (folder / "alias").symlink_to(folder / "a.txt")  # inside the folder: sent, as before
    skipped: list[str] = []
    keys = [f.key for f in local_files(folder, "p/", skipped)]
    assert keys == ["p/a.txt", "p/alias"]
    assert len(skipped) == 1 and skipped[0].startswith("leak (a symlink to a file outside")


def test_a_link_into_a_linked_folder_outside_is_left_out(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x").write_text("x")
    (folder / "x").symlink_to(tmp_path / "elsewhere" / "x")
    skipped: list[str] = []
    assert local_files(folder, "p/", skipped) == [] and skipped and "outside" in skipped[0]
