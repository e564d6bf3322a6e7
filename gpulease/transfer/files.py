"""What a push sends and a pull writes: local files under a path with their object keys, and the progress bar."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

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
    text = to.strip()
    if any(ord(c) < 32 or c == "\x7f" for c in to):
        raise UserError(f"--to {to!r}: holds a control character; accepted: {accepted}")
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


@contextmanager
def progress_bar(console: Console, enabled: bool = True) -> Iterator[Progress]:
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
               TimeRemainingColumn())
    with Progress(*columns, console=console, disable=not enabled, transient=False) as progress:
        yield progress
