"""What a push sends and a pull writes: local files under a path with their object keys, and the progress bar."""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

from components.spec.text import hidden_character
from gpulease.core.errors import UserError

AGAIN = ("Run the same command again to resume (what is already there is skipped); for a bucket that does not "
         "exist: is the stack deployed, and --org the stack's Pulumi organization?")

MTIME_KEY = "gpulease-mtime"
"""Object metadata: the local file's modification time (integer seconds) when it was pushed."""


@dataclass(frozen=True)
class LocalFile:
    path: Path
    key: str
    size: int
    mtime: int


CONTROL_FOLDER = "_gpulease"
"""The instance's control area (ready and verify records, tools, cluster settings) beside the checkpoints."""
DEFAULT_CHECKPOINT_PREFIX = "checkpoints/"


def key_prefix(to: str, reserved: tuple[str, ...] = (DEFAULT_CHECKPOINT_PREFIX,)) -> str:
    """``--to data/raw`` as an object prefix ``data/raw/``: a relative folder, no ``..``, never inside the
    checkpoints (``reserved``: what the instance resumes from) or the control area (``_gpulease/``)."""
    accepted = "a folder in the bucket such as data/ or data/raw/"
    hidden = hidden_character(to)
    if hidden:
        raise UserError(f"--to {to!r}: {hidden}; accepted: {accepted}")
    text = to
    if text.startswith("/"):
        raise UserError(f"--to {to!r}: an absolute path; a folder in the bucket is relative; accepted: {accepted}")
    clean = posixpath.normpath(text) if text else ""
    parts = clean.split("/")
    if clean in ("", ".") or ".." in parts or ".." in text.split("/"):
        raise UserError(f"--to {to!r}: accepted: {accepted}")
    prefix = clean.rstrip("/") + "/"
    if CONTROL_FOLDER in parts:
        raise UserError(f"--to {to!r}: {CONTROL_FOLDER}/ is the instance's control area (ready and verify "
                        f"records), never written by push; accepted: {accepted}")
    for folder in reserved:
        if prefix.startswith(folder) or folder.startswith(prefix):
            raise UserError(f"--to {to!r}: {folder} holds the stack's checkpoints (what a run resumes from), never "
                            f"written by push; accepted: {accepted} outside {folder}")
    return prefix


def local_files(path: Path, prefix: str) -> list[LocalFile]:
    """``path`` (a file, or a folder walked recursively) as files with their keys under ``prefix``."""
    if not path.exists():
        raise UserError(f"{path}: no such file or folder")
    if path.is_file():
        found = [(path, path.name)]
    else:
        found = [(p, p.relative_to(path).as_posix()) for p in sorted(path.rglob("*")) if p.is_file()]
    out = []
    for p, rel in found:
        stat = p.stat()
        out.append(LocalFile(p, prefix + rel, stat.st_size, int(stat.st_mtime)))
    return out


def local_target(dest: Path, key: str, prefix: str) -> Path:
    """Where a pulled object goes: ``dest/<key>``, refusing a key that would leave ``dest``."""
    rel = PurePosixPath(key)
    if rel.is_absolute() or ".." in rel.parts:
        raise UserError(f"object {key!r} under {prefix!r}: refusing a key that leaves the destination folder")
    return dest.joinpath(*rel.parts)


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _folder_of(dest: Path, key: str) -> tuple[int, Path]:
    """A descriptor of the folder ``key``'s file goes in, each folder below ``dest`` made (or entered) from the one
    above with ``O_NOFOLLOW``: a symlink on the way (``dest/final -> ~/.ssh``) is refused, never followed."""
    parts = PurePosixPath(key).parts
    dest.mkdir(parents=True, exist_ok=True)
    fd = os.open(dest, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    shown = dest
    for part in parts[:-1]:
        shown = shown / part
        with suppress(FileExistsError):
            os.mkdir(part, 0o755, dir_fd=fd)
        try:
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        except OSError:
            found = _kind(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode)
            os.close(fd)
            raise UserError(f"object {key!r}: {shown} is {found}; refusing to write through it (pull writes only "
                            f"inside {dest})") from None
        os.close(fd)
        fd = nxt
    return fd, shown


def _regular_or_absent(fd: int, name: str, key: str, shown: Path) -> int | None:
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"object {key!r}: {shown / name} is {_kind(st.st_mode)} where a file goes; refusing it "
                        "(move it away and pull again)")
    return st.st_size


def confined_target(dest: Path, key: str, prefix: str, temp_suffixes: tuple[str, ...] = ()) -> tuple[Path, int | None]:
    """Where a pulled object goes and the size of the regular file already there (None: nothing there); a
    symlink, folder, FIFO or device on the way or at the file's place is refused (``_folder_of``)."""
    target = local_target(dest, key, prefix)
    name = PurePosixPath(key).parts[-1]
    fd, shown = _folder_of(dest, key)
    try:
        for other in (name + suffix for suffix in temp_suffixes):
            _regular_or_absent(fd, other, key, shown)
        return target, _regular_or_absent(fd, name, key, shown)
    finally:
        os.close(fd)


def put_in_place(dest: Path, key: str, prefix: str, downloaded: str) -> Path:
    """Move ``downloaded`` (a file in a private folder of this pull) to its place below ``dest``: the folder is
    entered again from ``dest`` with ``O_NOFOLLOW`` and the file renamed into it by descriptor, so a symlink swapped
    in after ``confined_target`` looked is refused or bypassed, never written through."""
    target = local_target(dest, key, prefix)
    name = PurePosixPath(key).parts[-1]
    fd, shown = _folder_of(dest, key)
    try:
        _regular_or_absent(fd, name, key, shown)
        os.rename(downloaded, name, dst_dir_fd=fd)
        return target
    finally:
        os.close(fd)


@contextmanager
def progress_bar(console: Console, enabled: bool = True) -> Iterator[Progress]:
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
               TimeRemainingColumn())
    with Progress(*columns, console=console, disable=not enabled, transient=False) as progress:
        yield progress
