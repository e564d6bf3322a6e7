"""What a pull knows of the files it wrote, so that a later pull skips only what is really the same.

Size alone is not enough: an object replaced by another of the same size would never be fetched again. So each pull
keeps a record beside the files (``<dest>/.gpulease-pull.json``): per object, the bucket, the object's size and
ETag as listed when it was fetched, and the local file's size and modification time (ns) just after. A later pull
skips a file only when the record vouches for both sides: the local file is as the pull left it and the object's
ETag and size are as recorded. Otherwise it compares content:

- an ETag in the single-part form (32 hex digits, no ``-N``) may be the MD5 of the object's bytes: S3 gives that for
  objects written by one PUT or copy, plaintext or SSE-S3, never for SSE-KMS, SSE-C or multipart objects
  (https://docs.aws.amazon.com/AmazonS3/latest/API/API_Object.html, ``ETag``); OSS for objects written by
  PutObject (https://www.alibabacloud.com/help/en/oss/developer-reference/listobjectsv2, ``ETag``). A local MD5
  equal to it proves the same bytes; a different one proves nothing (KMS), so
- otherwise the object is fetched again (into the pull's private folder) and compared byte for byte with the local
  file. The same: the record is made, nothing moved. Different: the local file is kept, the download dropped, and
  the pull names the file and ends with exit 2 (``kept``): a local file that differs is never replaced unasked.

A local file the record vouches for (the pull's own copy, untouched since) is replaced by a changed object. A record
that cannot be read (not a regular file, too big, not the expected shape) is no record: every file is compared.
Not verified against S3 or OSS themselves (moto and the loopback OSS server give MD5 ETags for single-part objects).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from gpulease.transfer.files import folder_of

RECORD_NAME = ".gpulease-pull.json"
RECORD_MAX_BYTES = 64 * 1024 * 1024
CHUNK = 1024 * 1024
_MD5_TAG = re.compile(r'^"?([0-9a-fA-F]{32})"?\Z')


@dataclass(frozen=True)
class Listed:
    """One object as the bucket's listing gives it: key, size and ETag (None when the store gives none)."""

    key: str
    size: int
    tag: str | None = None

    @classmethod
    def of(cls, row: tuple[Any, ...]) -> Listed:
        return cls(str(row[0]), int(row[1]), str(row[2]) if len(row) > 2 and row[2] else None)


def md5_of_tag(tag: str | None) -> str | None:
    """The MD5 an ETag in the single-part form may be (lowercase hex), or None (a multipart ``…-N`` or none)."""
    found = _MD5_TAG.match(tag or "")
    return found.group(1).lower() if found else None


def _open_local(dest: Path, key: str) -> int | None:
    """A descriptor of ``dest/<key>`` opened without following a link on the way or at the end (None: absent or
    not a regular file)."""
    fd, _ = folder_of(dest, key)
    try:
        local = os.open(PurePosixPath(key).parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(local).st_mode):
        os.close(local)
        return None
    return local


def local_stat(dest: Path, key: str) -> os.stat_result | None:
    local = _open_local(dest, key)
    if local is None:
        return None
    try:
        return os.fstat(local)
    finally:
        os.close(local)


def _digest_fd(fd: int, algorithm: str, check: Callable[[], None]) -> str:
    h = hashlib.new(algorithm)
    while chunk := os.read(fd, CHUNK):
        h.update(chunk)
        check()
    return h.hexdigest()


def local_digest(dest: Path, key: str, algorithm: str, check: Callable[[], None] = lambda: None) -> str | None:
    local = _open_local(dest, key)
    if local is None:
        return None
    try:
        return _digest_fd(local, algorithm, check)
    finally:
        os.close(local)


def file_digest(path: str, algorithm: str, check: Callable[[], None] = lambda: None) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        return _digest_fd(fd, algorithm, check)
    finally:
        os.close(fd)


class PullRecord:
    """The record of ``dest`` (see the module's docstring), read once and written back at the end of a pull."""

    def __init__(self, dest: Path, bucket: str) -> None:
        self.dest, self.bucket = dest, bucket
        self.objects: dict[str, dict[str, Any]] = _read(dest)

    def vouches_local(self, key: str, st: os.stat_result) -> bool:
        """The local file is the one this record's pull left (same bucket, size and modification time)."""
        entry = self.objects.get(key)
        return (entry is not None and entry.get("bucket") == self.bucket and entry.get("localSize") == st.st_size
                and entry.get("localMtimeNs") == st.st_mtime_ns)

    def vouches_object(self, listed: Listed) -> bool:
        """The object is the one recorded: the same size and a known, equal ETag."""
        entry = self.objects.get(listed.key) or {}
        return listed.tag is not None and entry.get("tag") == listed.tag and entry.get("size") == listed.size

    def note(self, listed: Listed, st: os.stat_result | None) -> None:
        if st is None:
            self.objects.pop(listed.key, None)
            return
        self.objects[listed.key] = {"bucket": self.bucket, "size": listed.size, "tag": listed.tag,
                                    "localSize": st.st_size, "localMtimeNs": st.st_mtime_ns}

    def save(self, scratch: str) -> None:
        """Written in ``scratch`` (the pull's private folder below ``dest``) and renamed into ``dest`` by descriptor:
        never through a link swapped in at the record's name."""
        landed = os.path.join(scratch, "record.json")
        with open(landed, "w", encoding="utf-8") as fh:
            json.dump({"version": 1, "objects": self.objects}, fh, indent=1, sort_keys=True)
        fd = os.open(self.dest, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            with suppress(FileNotFoundError):
                if stat.S_ISDIR(os.stat(RECORD_NAME, dir_fd=fd, follow_symlinks=False).st_mode):
                    return  # a folder at the record's name is left alone; the next pull compares content
            os.rename(landed, RECORD_NAME, dst_dir_fd=fd)
        finally:
            os.close(fd)


def _read(dest: Path) -> dict[str, dict[str, Any]]:
    try:
        fd = os.open(dest, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        record = os.open(RECORD_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
    except OSError:
        return {}
    finally:
        os.close(fd)
    try:
        st = os.fstat(record)
        if not stat.S_ISREG(st.st_mode) or st.st_size > RECORD_MAX_BYTES:
            return {}
        with os.fdopen(record, "rb", closefd=False) as fh:
            doc = json.loads(fh.read(RECORD_MAX_BYTES + 1))
    except (OSError, ValueError):
        return {}
    finally:
        os.close(record)
    objects = doc.get("objects") if isinstance(doc, dict) and doc.get("version") == 1 else None
    if not isinstance(objects, dict):
        return {}
    return {k: v for k, v in objects.items() if isinstance(k, str) and isinstance(v, dict)}
