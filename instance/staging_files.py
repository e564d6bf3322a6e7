#!/usr/bin/env python3
"""The files staging writes, confined to their source's ``to`` folder (standard library only).

Every path below the folder is walked one component at a time from an open directory descriptor with
``O_NOFOLLOW`` (``openat``-style), so a symlink anywhere on the way (``to/sub -> /etc``, a stale ``f.bin.part ->
/data/checkpoints/step-9/model.pt``) is refused, never followed; a file is opened with ``O_NOFOLLOW | O_NONBLOCK``
and checked to be a regular file with ``fstat`` on the descriptor it will be written or read through, so a FIFO, a
device or a folder where a file is expected is refused too, and opening a FIFO never blocks. The folder itself is
reached the same way from an anchor the bootstrap made (the data disk's mount point). Renames happen between
descriptors of the same folder (``renameat``). A refusal is a ``ConfinementError`` naming the path and what was
found there."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import stat
import urllib.parse
from bisect import bisect_right
from collections.abc import Iterator
from typing import Any

try:
    from instance.unicode_table import HIDDEN
except ImportError:  # on the instance: installed next to this file
    from unicode_table import HIDDEN  # type: ignore[no-redef]

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
BLOCK = 1024 * 1024
JSON_LIMIT = 64 * 1024 * 1024
NAME_MAX = 255
"""The longest name of one path component on Linux file systems (ext4, xfs: NAME_MAX in <linux/limits.h>)."""
PATH_MAX = 4096
"""The longest path the kernel opens (PATH_MAX in <linux/limits.h>)."""
LONGEST_SUFFIX = ".part.json"
"""The longest name staging writes beside a file (its download record); a name must leave room for it."""
TO_MAX_BYTES = 512
"""The longest ``to:`` folder in UTF-8 bytes, which the spec accepts too (``components/spec/workflow.py``
TO_MAX_BYTES): the rest of PATH_MAX is left to the paths below it."""
_HIDDEN_STARTS = tuple(a for a, _ in HIDDEN)
INVISIBLE = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x2800, 0x2800),
             (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0xE0100, 0xE01EF))
"""Characters drawn as nothing: the same table as ``gpulease/core/printable.py`` INVISIBLE (a test compares the
two definitions over every code point)."""
_INVISIBLE = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in INVISIBLE) + "]")
REL_LIMIT = PATH_MAX - TO_MAX_BYTES - len(LONGEST_SUFFIX) - 1
ENCODED_SEPARATOR = re.compile(r"%(?:2[fF]|5[cC])")
FILE_NAME_MAX = NAME_LIMIT = NAME_MAX - len(LONGEST_SUFFIX)
"""The longest file name a source may give: NAME_MAX less the {suffix} staging writes beside the file."""


def source_path_problem(path: str, encoded: bool = True) -> str | None:
    """Why staging cannot write what a source's path names (None: it can), the same rule on both sides
    (``gpulease/core/datasources.py`` holds the other copy; a test feeds both one table): an encoded separator (``%2F``,
    ``%5C``: one name to the server, a folder here), escapes that are not UTF-8 (``%FF``), a ``.`` or ``..`` part
    after decoding, a name over NAME_MAX bytes of UTF-8 (a file name over FILE_NAME_MAX), or more than PATH_MAX
    bytes in all. ``encoded``: a URI path (https), else a bucket key."""
    if encoded and ENCODED_SEPARATOR.search(path):
        return "the path holds an encoded separator (%2F or %5C); accepted: / between folders, never encoded"
    text = urllib.parse.unquote(path, errors="surrogateescape") if encoded else path
    if encoded and any("\udc80" <= c <= "\udcff" for c in text):  # %FF, a lone %C3: bytes of no text (else U+FFFD)
        return "the path's %XX escapes are not UTF-8 (as %FF); accepted: escapes that spell UTF-8 text (%C3%A9 for é)"
    parts = [p for p in text.split("/") if p]
    if any(p in (".", "..") for p in parts):
        return "the path holds a . or .. part (also written %2e); accepted: a path without them"
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > PATH_MAX:
        return f"the path is {size} bytes; accepted: at most {PATH_MAX} bytes in UTF-8 (PATH_MAX)"
    for i, part in enumerate(parts):
        limit = FILE_NAME_MAX if i == len(parts) - 1 and not text.endswith("/") else NAME_MAX
        n = len(part.encode("utf-8", "surrogatepass"))
        if n > limit:
            return (f"a name of {n} bytes in UTF-8; accepted: a file name of at most {FILE_NAME_MAX} bytes (NAME_MAX "
                    f"{NAME_MAX} per path component, less the {LONGEST_SUFFIX} staging writes beside the file), a "
                    f"folder name of at most {NAME_MAX}")
    return None


class StagingError(Exception):
    """A source could not be staged; the message names it and says why."""


class DigestMismatchError(StagingError):
    """A staged file's digest (or size) is not the one expected."""


class ConfinementError(StagingError):
    """A path on the way to a file staging writes is a symlink, or not the kind of file expected."""


class MissingPathError(ConfinementError):
    """A folder on the way is not there (only when walking without creating)."""


def kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symlink"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def hidden(char: str) -> bool:
    """Whether ``char`` does not read as itself in a name (a control, format, separator, invisible, surrogate,
    private-use or unassigned code point), from the Unicode 14.0 table ``unicode_table.py``, as the kit decides."""
    i = bisect_right(_HIDDEN_STARTS, ord(char)) - 1
    return (i >= 0 and ord(char) <= HIDDEN[i][1]) or _INVISIBLE.match(char) is not None


def shown(text: str) -> str:
    """``text`` quoted, with every character that does not read as itself written as its escape (``\x1b``,
    ``\u202e``), as ``gpulease/core/printable.py`` writes them: a log line never carries them raw."""
    return "'" + "".join(
        (f"\\x{ord(c):02x}" if ord(c) <= 0xFF else f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}")
        if hidden(c) or c in "\\'" else c for c in text) + "'"


def check_to(to: str) -> None:
    """Refuse a ``to:`` folder the spec refuses too: a character that does not read as itself, more than
    ``TO_MAX_BYTES`` bytes, or a name longer than ``NAME_MAX`` bytes (both counted in UTF-8, as the kernel does)."""
    bad = next((c for c in to if hidden(c)), None)
    if bad is not None:
        raise ConfinementError(f"refusing the folder {to!r}: it holds U+{ord(bad):04X}, a character that is not "
                               "shown as itself; accepted: a folder path of visible characters")
    size = len(to.encode("utf-8", "surrogatepass"))
    longest = max((len(p.encode("utf-8", "surrogatepass")) for p in to.split("/")), default=0)
    if size > TO_MAX_BYTES or longest > NAME_MAX:
        raise ConfinementError(f"refusing the folder {to[:80]!r}...: {size} bytes, its longest name {longest} bytes; "
                               f"accepted: at most {TO_MAX_BYTES} bytes in UTF-8, each name at most {NAME_MAX}")


def rel_parts(rel: str) -> list[str]:
    """The components of a relative path from a listing; refuses one that would leave its folder."""
    parts = rel.split("/")
    if not rel or "\0" in rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ConfinementError(f"refusing the path {rel!r}: it leaves its folder (accepted: a relative path without "
                               "'.', '..' or empty parts)")
    bad = next((c for c in rel if hidden(c)), None)
    if bad is not None:
        raise ConfinementError(f"refusing the path {shown(rel[:200])}: it holds U+{ord(bad):04X}, a character that is "
                               "not shown as itself; accepted: names of visible characters")
    longest = max(parts, key=lambda p: len(p.encode("utf-8", "surrogatepass")))
    if len(longest.encode("utf-8", "surrogatepass")) > NAME_LIMIT:
        raise ConfinementError(f"refusing the path {rel[:80]!r}...: a name of {len(longest.encode())} bytes; accepted: "
                               f"names of at most {NAME_LIMIT} bytes (NAME_MAX {NAME_MAX} less the {LONGEST_SUFFIX} "
                               "staging writes beside a file)")
    if len(rel.encode()) > REL_LIMIT:
        raise ConfinementError(f"refusing the path {rel[:80]!r}...: {len(rel.encode())} bytes; accepted: at most "
                               f"{REL_LIMIT} bytes below its folder (PATH_MAX {PATH_MAX} with a to: folder of up to "
                               f"{TO_MAX_BYTES})")
    return parts


def _refusal(path: str, exc: OSError, expected: str, dfd: int | None = None, name: str = "") -> ConfinementError:
    if dfd is not None and exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR, errno.EISDIR):
        try:
            found = kind(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode)
        except OSError:
            found = ""
        if found == "a symlink":
            return ConfinementError(f"{path} is a symlink: refusing to follow it (staging writes only inside its folder)")
        if found and expected == "a folder":
            return ConfinementError(f"{path} is {found} where a folder is expected: refusing to write through it")
        if found:
            return ConfinementError(f"{path} is {found} where a file is expected: refusing it")
    if exc.errno in (errno.ELOOP, errno.EMLINK):
        return ConfinementError(f"{path} is a symlink: refusing to follow it (staging writes only inside its folder)")
    if exc.errno == errno.ENOTDIR:
        return ConfinementError(f"{path} is not a folder: refusing to write through it")
    if exc.errno == errno.ENOENT:
        return MissingPathError(f"{path} is missing")
    if exc.errno == errno.EISDIR:
        return ConfinementError(f"{path} is a folder where {expected} is expected")
    return ConfinementError(f"{path}: {exc.strerror or exc}")


class Folder:
    """A ``to`` folder, opened from ``anchor`` without following any link; paths are relative to it."""

    def __init__(self, root: str, anchor: str = "/", create: bool = True) -> None:
        root = os.path.normpath(root)
        anchor = os.path.normpath(anchor)
        if root != anchor and not root.startswith(anchor.rstrip("/") + "/"):
            anchor = "/"
        self.root = root
        self.fd = os.open(anchor, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        below = os.path.relpath(root, anchor)
        if below != ".":
            try:
                fd = self._walk(below.split("/"), create, anchor)
            finally:
                os.close(self.fd)
            self.fd = fd

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def path(self, rel: str) -> str:
        return os.path.join(self.root, rel)

    def _walk(self, parts: list[str], create: bool, base: str | None = None) -> int:
        """A new descriptor of the folder ``parts`` below this one (or ``base``), each step with ``O_NOFOLLOW``."""
        fd = os.dup(self.fd)
        shown = base if base is not None else self.root
        try:
            for part in parts:
                shown = os.path.join(shown, part)
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=fd)
                try:
                    nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    raise _refusal(shown, exc, "a folder", fd, part) from None
                os.close(fd)
                fd = nxt
            return fd
        except BaseException:
            os.close(fd)
            raise

    def parent(self, rel: str, create: bool = True) -> tuple[int, str]:
        """(descriptor of the folder holding ``rel``, its last component); the caller closes the descriptor."""
        parts = rel_parts(rel)
        return self._walk(parts[:-1], create), parts[-1]

    def lstat(self, rel: str) -> os.stat_result | None:
        """What is at ``rel`` without following it (None: nothing, or a folder on the way is missing)."""
        try:
            dfd, name = self.parent(rel, create=False)
        except MissingPathError:
            return None
        try:
            return os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        finally:
            os.close(dfd)

    def regular_size(self, rel: str) -> int | None:
        """The size of the regular file at ``rel``; None when nothing is there; refuses anything else."""
        st = self.lstat(rel)
        if st is None:
            return None
        if not stat.S_ISREG(st.st_mode):
            raise ConfinementError(f"{self.path(rel)} is {kind(st.st_mode)} where a file is expected: refusing it")
        return st.st_size

    def open(self, rel: str, write: bool) -> int | None:
        """A descriptor of the regular file ``rel`` (created when ``write``); None when reading a missing file."""
        dfd, name = self.parent(rel, create=write)
        try:
            flags = FILE_FLAGS | (os.O_RDWR | os.O_CREAT if write else os.O_RDONLY)
            try:
                fd = os.open(name, flags, 0o644, dir_fd=dfd)
            except FileNotFoundError:
                if write:
                    raise
                return None
            except OSError as exc:
                raise _refusal(self.path(rel), exc, "a file", dfd, name) from None
        finally:
            os.close(dfd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise ConfinementError(f"{self.path(rel)} is {kind(st.st_mode)} where a file is expected: refusing it")
        if write and st.st_nlink > 1:
            # A hard link (a `.part` linked to a checkpoint on the same disk) would have the other name's bytes
            # written over: a file staging writes has one name only.
            os.close(fd)
            raise ConfinementError(f"{self.path(rel)} has {st.st_nlink} names (a hard link) where a file of its "
                                   "own is expected: refusing to write through it")
        os.set_blocking(fd, True)
        return fd

    def replace(self, src: str, dst: str) -> None:
        """Rename ``src`` to ``dst`` (both below this folder); what is at ``dst`` must be a regular file or nothing."""
        self.regular_size(dst)
        sfd, sname = self.parent(src, create=False)
        try:
            dfd, dname = self.parent(dst, create=True)
            try:
                os.replace(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd)
            finally:
                os.close(dfd)
        finally:
            os.close(sfd)

    def remove(self, rel: str) -> None:
        """Unlink ``rel`` if it is there (a symlink is removed as a link, never followed)."""
        try:
            dfd, name = self.parent(rel, create=False)
        except MissingPathError:
            return
        try:
            os.unlink(name, dir_fd=dfd)
        except (FileNotFoundError, IsADirectoryError, PermissionError):
            pass
        finally:
            os.close(dfd)

    def write_json(self, rel: str, value: Any) -> None:
        """Write through a new temporary file in the same folder and a rename (never through an existing file)."""
        dfd, name = self.parent(rel, create=True)
        try:
            tmp = f".{name}.{os.getpid()}.tmp"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dfd)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | FILE_FLAGS, 0o644, dir_fd=dfd)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(value, fh, indent=2, sort_keys=True)
                fh.flush()
                os.fsync(fh.fileno())
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False) if _exists(name, dfd) else None
            if st is not None and not stat.S_ISREG(st.st_mode):
                os.unlink(tmp, dir_fd=dfd)
                raise ConfinementError(f"{self.path(rel)} is {kind(st.st_mode)} where a file is expected: refusing it")
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        finally:
            os.close(dfd)

    def read_json(self, rel: str) -> Any:
        """The JSON in the regular file ``rel``; None when it is missing, unreadable or not JSON."""
        try:
            fd = self.open(rel, write=False)
        except (ConfinementError, OSError):
            return None
        if fd is None:
            return None
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(JSON_LIMIT + 1)
        try:
            return json.loads(data) if len(data) <= JSON_LIMIT else None
        except ValueError:
            return None

    def hash(self, rel: str, blob: bool = False) -> tuple[int, str, str | None]:
        """(size, SHA-256, git blob SHA-1 when ``blob``) of the regular file ``rel``, in one read."""
        fd = self.open(rel, write=False)
        if fd is None:
            raise ConfinementError(f"{self.path(rel)} is missing")
        try:
            size = os.fstat(fd).st_size
            sha256 = hashlib.sha256()
            sha1 = hashlib.sha1(f"blob {size}\0".encode()) if blob else None  # git's object ids: not for security
            while block := os.read(fd, BLOCK):
                sha256.update(block)
                if sha1 is not None:
                    sha1.update(block)
            return size, sha256.hexdigest(), sha1.hexdigest() if sha1 else None
        finally:
            os.close(fd)

    def files(self) -> Iterator[tuple[str, int]]:
        """Every regular file below the folder as (relative path, size), sorted; refuses a symlink, FIFO, device or
        socket anywhere in it (a storage CLI would write through it or hang on it)."""
        yield from self._files(os.dup(self.fd), "")

    def _files(self, fd: int, prefix: str) -> Iterator[tuple[str, int]]:
        try:
            entries = sorted(os.scandir(fd), key=lambda e: e.name)
            for entry in entries:
                rel = prefix + entry.name
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    try:
                        sub = os.open(entry.name, DIR_FLAGS, dir_fd=fd)
                    except OSError as exc:
                        raise _refusal(self.path(rel), exc, "a folder", fd, entry.name) from None
                    yield from self._files(sub, rel + "/")
                elif stat.S_ISREG(st.st_mode):
                    yield rel, st.st_size
                else:
                    raise ConfinementError(f"{self.path(rel)} is {kind(st.st_mode)}: refusing it (a source's folder "
                                           "holds regular files and folders only)")
        finally:
            os.close(fd)


def _exists(name: str, dfd: int) -> bool:
    try:
        os.stat(name, dir_fd=dfd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False
