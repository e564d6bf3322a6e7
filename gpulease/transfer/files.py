"""What a push sends and a pull writes: local files under a path with their object keys, and the progress bar."""

from __future__ import annotations

import hashlib
import os
import posixpath
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

from components.spec.text import hidden_character
from gpulease.core.errors import UserError
from gpulease.core.printable import printable
from gpulease.transfer.noreplace import FETCH_ERRORS, noreplace_rename

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


KEY_MAX_BYTES = {"aws": 1024, "alicloud": 1023}
"""The longest object key, in bytes of UTF-8: S3 1,024 (https://docs.aws.amazon.com/AmazonS3/latest/userguide/
object-keys.html), OSS 1,023 (https://www.alibabacloud.com/help/en/oss/user-guide/object-naming-conventions)."""
NAME_MAX = 255
"""The longest file or folder name a Linux file system takes, in bytes."""
PATH_MAX = 4096
"""The longest path the kernel takes, in bytes with its closing NUL."""
SHOWN_SKIPPED = 10

CONTROL_FOLDER = "_gpulease"
"""The kit's own records at the bucket root (the instance's reports, ready records, tools) and its control area
beside the checkpoints (jobs, logs, the cluster notice)."""
DEFAULT_CHECKPOINT_PREFIX = "checkpoints/"


def key_prefix(to: str, reserved: tuple[str, ...] = (DEFAULT_CHECKPOINT_PREFIX,)) -> str:
    """``--to data/raw`` as an object prefix ``data/raw/``: a relative folder, no ``..``, never inside the
    checkpoints (``reserved``: what the instance resumes from) or the control area (``_gpulease/``)."""
    accepted = "a folder in the bucket such as data/ or data/raw/"
    shown = "'" + printable(to[:60]) + "'" + ("..." if len(to) > 60 else "")  # never raw: a Hangul filler or an escape would not read as itself
    hidden = hidden_character(to)
    if hidden:
        raise UserError(f"--to {shown}: {hidden}; accepted: {accepted}")
    text = to
    if text.startswith("/"):
        raise UserError(f"--to {shown}: an absolute path; a folder in the bucket is relative; accepted: {accepted}")
    clean = posixpath.normpath(text) if text else ""
    parts = clean.split("/")
    if clean in ("", ".") or ".." in parts or ".." in text.split("/"):
        raise UserError(f"--to {shown}: accepted: {accepted}")
    prefix = clean.rstrip("/") + "/"
    room = min(KEY_MAX_BYTES.values())  # a key is the prefix and at least one byte of a name
    if len(prefix.encode()) >= room:
        raise UserError(f"--to {shown}: {len(prefix.encode())} bytes as a key prefix; object keys are at most "
                        f"{room} bytes of UTF-8 (S3 1,024, OSS 1,023); accepted: {accepted}, shorter than {room} bytes")
    longest = max((len(p.encode()) for p in parts), default=0)
    if longest > NAME_MAX:  # pull writes each folder name as a local name: the same bound as pull's
        raise UserError(f"--to {shown}: a folder name of {longest} bytes; accepted: {accepted}, each folder name "
                        f"at most {NAME_MAX} bytes of UTF-8 (a local file system's longest name, as pull refuses)")
    if CONTROL_FOLDER in parts:
        raise UserError(f"--to {shown}: {CONTROL_FOLDER}/ is the instance's control area (ready and verify "
                        f"records), never written by push; accepted: {accepted}")
    for folder in reserved:
        if prefix.startswith(folder) or folder.startswith(prefix):
            raise UserError(f"--to {shown}: {folder} holds the stack's checkpoints (what a run resumes from), never "
                            f"written by push; accepted: {accepted} outside {folder}")
    return prefix




def local_files(path: Path, prefix: str, skipped: list[str] | None = None) -> list[LocalFile]:
    """``path`` (a regular file, or a folder walked recursively) as files with their keys under ``prefix``. A
    top-level path that is neither (a FIFO, a device, a broken link) is refused; inside a folder, what is not a
    regular file or a folder is left out and named in ``skipped`` (``name (what it is)``)."""
    if not os.path.lexists(path):
        raise UserError(f"{path}: no such file or folder")
    try:
        top = path.stat()
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({exc.strerror or exc}); accepted: a regular file or a folder") from None
    if stat.S_ISREG(top.st_mode):
        return [LocalFile(path, prefix + path.name, top.st_size, int(top.st_mtime))]
    if not stat.S_ISDIR(top.st_mode):
        raise UserError(f"{path}: is {_kind(top.st_mode)}, which push would read nothing (or forever) from; "
                        "accepted: a regular file or a folder")
    out = []
    for p in sorted(path.rglob("*")):
        rel = p.relative_to(path).as_posix()
        try:
            found = p.stat()
        except OSError:
            found = None
        if found is not None and stat.S_ISREG(found.st_mode) and p.is_symlink() and not _inside(p, path):
            if skipped is not None:  # /etc/passwd or ~/.ssh/id_rsa linked in: never sent from outside the folder
                skipped.append(f"{rel} (a symlink to a file outside {path.name or path})")
        elif found is not None and stat.S_ISREG(found.st_mode):
            out.append(LocalFile(p, prefix + rel, found.st_size, int(found.st_mtime)))
        elif found is not None and stat.S_ISDIR(found.st_mode) and not p.is_symlink():
            continue
        elif skipped is not None:
            what = "a broken symlink" if found is None else _kind(found.st_mode)
            link = "a symlink to " if found is not None and p.is_symlink() else ""
            skipped.append(f"{rel} ({link}{what})")
    return out


def _inside(link: Path, folder: Path) -> bool:
    """Whether ``link`` resolves to a file inside ``folder`` (both resolved: links on the way count)."""
    try:
        return link.resolve(strict=True).is_relative_to(folder.resolve(strict=True))
    except OSError:
        return False


def key_problem(dest: Path, key: str, temp_suffixes: tuple[str, ...] = ()) -> str | None:
    """Why an object cannot be pulled to ``dest/<key>`` as it reads (None: it can): a hidden character, a key not in
    canonical form (an empty, ``.`` or ``..`` part; two such keys would land on one file), or a name or path
    longer than the file system takes. Checked before anything touches the disk."""
    hidden = hidden_character(key)
    if hidden:
        return hidden
    parts = key.split("/")
    if key.startswith("/") or ".." in parts:
        return "leaves the destination folder"
    if any(part in ("", ".") for part in parts):
        return "not in canonical form (an empty or . part in the name); it would land on another object's file"
    longest = max(len(part.encode()) for part in parts) + max((len(s.encode()) for s in temp_suffixes), default=0)
    if longest > NAME_MAX:
        return f"a name of {longest} bytes with the download's suffix; at most {NAME_MAX} per file or folder name"
    whole = len(os.fsencode(os.path.join(os.path.abspath(dest), *parts))) + 1
    if whole > PATH_MAX:
        return f"the local path would be {whole} bytes; at most {PATH_MAX}"
    return None


def local_target(dest: Path, key: str, prefix: str) -> Path:
    """Where a pulled object goes: ``dest/<key>``, refusing a key that would leave ``dest`` or is not canonical."""
    rel = PurePosixPath(key)
    if rel.is_absolute() or ".." in rel.parts or any(part in ("", ".") for part in key.split("/")):
        raise UserError(f"object {key!r} under {prefix!r}: refusing a key that leaves the destination folder or is "
                        "not in canonical form")
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


def folder_of(dest: Path, key: str) -> tuple[int, Path]:
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
    symlink, folder, FIFO or device on the way or at the file's place is refused (``folder_of``)."""
    target = local_target(dest, key, prefix)
    name = PurePosixPath(key).parts[-1]
    fd, shown = folder_of(dest, key)
    try:
        for other in (name + suffix for suffix in temp_suffixes):
            _regular_or_absent(fd, other, key, shown)
        return target, _regular_or_absent(fd, name, key, shown)
    finally:
        os.close(fd)


class AppearedMeanwhileError(UserError):
    """A file appeared at an object's place while it downloaded: kept, and the download dropped."""


def _place_no_replace(src: str, name: str, fd: int) -> None:
    """``src`` to ``name`` in the folder ``fd``, never replacing what is there (``FileExistsError``): the kernel's
    ``renameat2(RENAME_NOREPLACE)`` where it has it, else a hard link (which refuses an existing name) and the
    source unlinked."""
    if noreplace_rename(src, name, fd):
        return
    os.link(src, name, dst_dir_fd=fd, follow_symlinks=False)
    os.unlink(src)


def _same_file(fd: int, name: str, seen: os.stat_result) -> bool:
    try:
        now = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) == (seen.st_dev, seen.st_ino, seen.st_size,
                                                                      seen.st_mtime_ns)


def put_in_place(dest: Path, key: str, prefix: str, downloaded: str, own: os.stat_result | None = None) -> Path:
    """Move ``downloaded`` (a file in a private folder of this pull) to its place below ``dest``: the folder is
    entered again from ``dest`` with ``O_NOFOLLOW`` and the file moved into it by descriptor without replacing
    anything, so a symlink swapped in after ``confined_target`` looked is refused or bypassed, never written
    through, and a file that appeared there during the download is kept (``AppearedMeanwhileError``). ``own``:
    the pull's own earlier copy, seen before the download; replaced only while it is still that very file."""
    target = local_target(dest, key, prefix)
    name = PurePosixPath(key).parts[-1]
    fd, shown = folder_of(dest, key)
    try:
        _regular_or_absent(fd, name, key, shown)
        try:
            if own is not None and _same_file(fd, name, own):
                os.rename(downloaded, name, dst_dir_fd=fd)
            else:
                _place_no_replace(downloaded, name, fd)
        except FileExistsError:
            with suppress(OSError):
                os.unlink(downloaded)
            raise AppearedMeanwhileError(f"object {key!r}: {shown / name} appeared during the download; kept, never "
                                    "overwritten (move it away and fetch again)") from None
        return target
    finally:
        os.close(fd)


@contextmanager
def progress_bar(console: Console, enabled: bool = True) -> Iterator[Progress]:
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
               TimeRemainingColumn())
    with Progress(*columns, console=console, disable=not enabled, transient=False) as progress:
        yield progress


class FileOrFolder:
    """Keys of one pull that cannot all be written: ``final/a`` is a file and ``final/a/b`` needs ``final/a`` as a
    folder. The first key listed keeps its place; each later one that conflicts is failed on its own (named with
    the key it conflicts with), before anything touches the disk, so the rest of the pull goes on."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}    # local file (normcased) -> its key
        self.folders: dict[str, str] = {}  # local folder (normcased) -> the first key below it

    def conflict(self, key: str) -> str | None:
        parts = key.split("/")
        folders = [os.path.normcase("/".join(parts[:i])) for i in range(1, len(parts))]
        here = os.path.normcase(key)
        above = next((self.files[f] for f in folders if f in self.files), None)
        if above is not None:
            return f"needs {above!r} as a folder, but that object is a file in this pull"
        if here in self.folders:
            return f"is a file where {self.folders[here]!r} needs a folder in this pull"
        self.files[here] = key
        for f in folders:
            self.folders.setdefault(f, key)
        return None


def name_problem(dest: Path, key: str, prefix: str, chosen: dict[str, str], temp_suffixes: tuple[str, ...] = ()) -> str | None:
    """Why ``key`` (relative to ``dest``) cannot be written as it reads (None: it can): ``key_problem``, or it lands on
    the same local file as a key seen before in this transfer (``chosen``: local file, normcased -> its key)."""
    problem = key_problem(dest, key, temp_suffixes)
    if problem is None:
        first = chosen.setdefault(os.path.normcase(os.fspath(local_target(dest, key, prefix))), key)
        if first != key:
            problem = f"lands on the same file as {first!r}"
    return problem


def file_digest(path: Path) -> str:
    """The MD5 of a file's bytes, hex (what S3 and OSS report as the ETag of an object put in one part)."""
    with path.open("rb") as f:
        return hashlib.file_digest(f, "md5").hexdigest()


def write_confined(dest: Path, names: list[str], prefix: str, fetch: Callable[[str, str], None],
                   failed: list[str] | None = None,
                   stop: Callable[[], str | None] = lambda: None,
                   same: Callable[[str, Path, str], bool] | None = None) -> tuple[list[Path], list[str]]:
    """Each of ``names`` (keys relative to ``dest``) fetched (``fetch(name, local_path)``) into a private folder of
    this call (0700) and renamed into place below ``dest`` by descriptor, with pull's rules: a name that does not
    read as itself or is not canonical, two names on one file, a file where a folder goes, a symlink on the way
    and a file already there are refused (never written, never overwritten). Returns the files written and the
    refused names with why (``'name' (reason)``). An object whose fetch fails (a 404 after the listing, a 5xx
    after the client's retries, a full disk) is refused with its reason and also named in ``failed``; the rest go
    on. ``stop``: why no further name is fetched (a deadline), each remaining one then named in ``failed``.
    ``same(name, local, scratch)``: whether the file already there is the object itself (then it counts as
    written, untouched); ``scratch`` a path in the private folder it may fetch into to compare."""
    written: list[Path] = []
    refused: list[str] = []
    chosen: dict[str, str] = {}
    shapes = FileOrFolder()
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest, prefix=".gpulease-fetch-") as own:
        for index, name in enumerate(names):
            if (why := stop()) is not None:
                if failed is not None:
                    failed += [f"'{printable(rest)}' ({why})" for rest in names[index:]]
                break
            problem = name_problem(dest, name, prefix, chosen) or shapes.conflict(name)
            try:
                if problem is None and (here := confined_target(dest, name, prefix))[1] is not None:
                    scratch = os.path.join(own, f"{len(written) + len(refused)}.compare")
                    if same is not None and same(name, here[0], scratch):
                        written.append(here[0])
                        continue
                    problem = "a local file is already there; never overwritten"
                if problem is None:
                    landed = os.path.join(own, f"{len(written) + len(refused)}.download")
                    fetch(name, landed)
                    written.append(put_in_place(dest, name, prefix, landed))
            except UserError as exc:
                problem = str(exc)
            except FETCH_ERRORS as exc:  # botocore already retried what is transient (its retry config)
                problem = f"not collected: {type(exc).__name__}: {str(exc).strip()[:300]}"
                if failed is not None:
                    failed.append(f"'{printable(name)}' ({problem})")
            if problem is not None:
                refused.append(f"'{printable(name)}' ({problem})")
    return written, refused
