#!/usr/bin/env python3
"""Part files for staging: a file being downloaded is written in place into ``<file>.part``, with the state that lets
it be resumed in ``<file>.part.json``, and renamed to its place once its size and digest are checked (standard
library only).

- **Pieces.** ``prepare`` opens the part and decides what on disk may be kept; ``pieces`` names the byte ranges
  still to download (one piece without ``Range`` for a small file, or one of unknown size).
- **Resume.** A piece cut short keeps what arrived (``_partial``); across reboots ``<file>.part.json`` keeps the
  file's size, ETag and the ranges already on disk (written after an ``fdatasync`` of the part, so it never claims
  bytes the disk may not hold). A part no validator vouches for, or of another layout, is downloaded again from 0.
- **Restart.** A server that sends the whole file again (it ignores ``Range``, or the file changed under
  ``If-Range``) truncates the part under its lock, and every piece still in flight of the file is superseded; the
  state file is first rewritten to name no range and no validator, so no later run resumes the earlier version.
- **Finish.** The file's size and its digest (SHA-256, or the hub's git blob id) are checked before the part is
  renamed; a wrong file is removed, never resumed from.

Every file is opened through ``staging_files.Folder``: never through a symlink, never a FIFO or a device.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

try:
    from instance import bounds
    from instance.staging_files import DigestMismatchError, Folder, StagingError
    from instance.staging_hash import OrderedHash
except ImportError:  # on the instance: installed next to this file
    import bounds  # type: ignore[no-redef]
    from staging_files import DigestMismatchError, Folder, StagingError  # type: ignore[no-redef]
    from staging_hash import OrderedHash  # type: ignore[no-redef]


class SupersededError(Exception):
    """A piece of a file that is being downloaded again from its start (the server sent the whole file)."""


PROGRESS_EVERY_SECONDS = bounds.value("staging_progress")


@dataclass
class FileJob:
    url: str
    rel: str
    size: int | None = None
    sha256: str | None = None
    sha1_blob: str | None = None
    what: str = ""


@dataclass
class Piece:
    start: int
    end: int | None  # exclusive; None: to the end of the file
    attempt: int = 0
    not_before: float = 0.0
    generation: int = 0


@dataclass
class FileTask:
    job: FileJob
    fd: int | None  # open only while a piece is written (``Engine.held``), so descriptors are bounded by workers
    size: int | None
    etag: str | None  # the If-Range validator: a strong ETag, or a strong Last-Modified (``if_range_validator``)
    done: list[list[int]]
    hasher: OrderedHash
    generation: int = 0
    open_pieces: int = 0
    multi: bool = False
    verified_by_length: bool = False
    users: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def part(self) -> str:
        return self.job.rel + ".part"

    @property
    def state(self) -> str:
        return self.job.rel + ".part.json"


def _merge(extents: list[list[int]]) -> list[list[int]]:
    out: list[list[int]] = []
    for start, end in sorted(extents):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        elif end > start:
            out.append([start, end])
    return out


class PartFiles:
    """The part files of one run: what ``Engine`` (``staging_fetch``) writes its pieces into, and the run's shared
    state they report to (the queue, the results, the first failure); ``Engine.__init__`` sets these."""

    folder: Folder
    piece_size: int
    split_above: int
    log: Any
    queue: deque[tuple[FileTask, Piece]]
    cond: threading.Condition
    failure: BaseException | None
    results: dict[str, dict[str, Any]]
    unfinished: int
    reported: float
    moved: int

    def prepare(self, job: FileJob) -> FileTask:
        self.folder.regular_size(job.rel)  # a symlink, folder, FIFO or device where the file goes: refused
        state = self.folder.read_json(job.rel + ".part.json") or {}
        fd = self.folder.open(job.rel + ".part", write=True)
        assert fd is not None
        have = os.fstat(fd).st_size
        size = job.size
        if not isinstance(state, dict) or (size is not None and state.get("size") not in (None, size)):
            state = {}
        etag = state.get("etag") if isinstance(state.get("etag"), str) and state["etag"] else None
        size = size if size is not None else state.get("size") if isinstance(state.get("size"), int) else None
        multi = size is not None and size > self.split_above
        done: list[list[int]] = []
        if state.get("mode") == "pieces" and multi and etag and isinstance(state.get("done"), list):
            done = _merge([[int(a), int(b)] for a, b in state["done"]
                           if isinstance(a, int) and isinstance(b, int) and 0 <= a < b <= have])
        elif state.get("mode") == "pieces" or (size is not None and have > size) or (have and etag is None):
            os.ftruncate(fd, 0)  # a layout this run cannot trust, or bytes no validator vouches for: start again
            have = 0
        elif have:
            done = [[0, have]]  # a stream cut earlier: the bytes before the cut
        if multi and done and state.get("mode") != "pieces":
            multi = False  # resume the stream as it was begun
        hasher = OrderedHash(fd, size if job.sha1_blob else None)
        task = FileTask(job, fd, size, etag, done, hasher, multi=multi)
        if multi:
            assert size is not None
            try:
                os.posix_fallocate(fd, 0, size)
            except OSError:
                os.ftruncate(fd, size)
            self._save(task)
        return task

    def pieces(self, task: FileTask) -> list[Piece]:
        size = task.size
        if not task.multi:
            start = task.done[0][1] if task.done else 0
            if size is not None and size > 0 and start == size:
                return []  # whole already: a reboot came between the download and the rename
            return [Piece(start, None, generation=task.generation)]
        assert size is not None
        gaps, at = [], 0
        for start, end in task.done:
            if start > at:
                gaps.append((at, start))
            at = max(at, end)
        if at < size:
            gaps.append((at, size))
        out = []
        for start, end in gaps:
            for a in range(start, end, self.piece_size):
                out.append(Piece(a, min(end, a + self.piece_size), generation=task.generation))
        return out

    def _save(self, task: FileTask) -> None:
        """The ranges on disk, after the bytes they name are durable."""
        os.fdatasync(task.fd)
        self.folder.write_json(task.state, {"mode": "pieces" if task.multi else "stream", "size": task.size,
                                            "etag": task.etag, "done": task.done, "url": task.job.url})

    @contextlib.contextmanager
    def held(self, task: FileTask) -> Any:
        """The task's part file open while a piece is written to it: opened (and its confinement checked again) by
        the first piece in flight, closed by the last."""
        with task.lock:
            if task.fd is None:
                task.fd = self.folder.open(task.part, write=True)
                task.hasher.fd = task.fd
            task.users += 1
        try:
            yield
        finally:
            with task.lock:
                task.users -= 1
                if task.users <= 0:
                    self._close(task)

    def _close(self, task: FileTask) -> None:
        fd, task.fd, task.users, task.hasher.fd = task.fd, None, 0, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _fail(self, exc: BaseException) -> None:
        with self.cond:
            if self.failure is None:
                self.failure = exc
            self.cond.notify_all()

    def _write(self, task: FileTask, generation: int, buffer: memoryview, pos: int, filled: int) -> int:
        """Write the buffer's first ``filled`` bytes at ``pos`` and hash them: the new end of what is written."""
        chunk = buffer[:filled]
        with task.lock:  # a restart truncates the file under this lock: no stale write lands after it
            if generation != task.generation:
                raise SupersededError()
            hasher = task.hasher  # this generation's: a restart after the lock hashes into a new one
            written = 0
            while written < filled:
                written += os.pwrite(task.fd, chunk[written:], pos + written)
        hasher.wrote(pos, chunk)
        self._progress(filled, task)
        return pos + filled

    def _progress(self, n: int, task: FileTask) -> None:
        self.moved += n
        now = time.monotonic()
        if now - self.reported >= PROGRESS_EVERY_SECONDS:
            self.reported = now
            self.log(f"staging: {self.moved / 2 ** 20:.1f} MiB so far (now {task.job.what})")

    def _partial(self, task: FileTask, piece: Piece, start: int, pos: int) -> None:
        if pos > start:
            with task.lock:
                task.done = _merge([*task.done, [start, pos]])
                if task.multi:
                    self._save(task)
        piece.start = pos

    def _restart(self, task: FileTask, piece: Piece, why: str = "the server sent the whole file again") -> None:
        with task.lock:
            self.log(f"staging {task.job.what}: {why}; downloading it from 0")
            task.generation += 1
            piece.generation = task.generation
            with self.cond:
                self.queue = deque((t, p) for t, p in self.queue if t is not task)
            task.open_pieces = 1  # this piece, now the whole file; pieces still in flight are superseded
            task.multi = False
            task.done = []
            task.etag = None
            # The earlier version's ranges leave the state file (one rename) before its bytes leave the part: a
            # crash after this never joins them to the new version's bytes on the next run.
            self.folder.write_json(task.state, {"mode": "stream", "size": task.size, "etag": None, "done": [],
                                                "url": task.job.url})
            os.ftruncate(task.fd, 0)
            task.hasher = OrderedHash(task.fd, task.size if task.job.sha1_blob else None)
            piece.start, piece.end = 0, None

    def _piece_done(self, task: FileTask, piece: Piece, pos: int, start: int | None = None) -> None:
        with task.lock:
            if piece.generation != task.generation:
                return
            if start is not None and pos > start:
                task.done = _merge([*task.done, [start, pos]])
            task.open_pieces -= 1
            last = task.open_pieces <= 0
            if not last and task.multi:
                self._save(task)
        if last:
            self._finish(task)

    def _finish(self, task: FileTask) -> None:
        job = task.job
        try:
            size = os.fstat(task.fd).st_size
            if task.size is not None and size != task.size:
                raise DigestMismatchError(f"{job.what}: {size} bytes downloaded, {task.size} expected")
            covered = task.done == [[0, size]] or size == 0
            if not covered or task.hasher.frontier != size:
                raise StagingError(f"{job.what}: the downloaded ranges do not cover the file ({task.done} of {size})")
            sha256 = task.hasher.sha256.hexdigest()
            if job.sha256 is not None and sha256 != job.sha256:
                self._drop(task)
                raise DigestMismatchError(f"{job.what}: SHA-256 {sha256} is not the expected {job.sha256}")
            if job.sha1_blob is not None and task.hasher.sha1 is not None:
                found = task.hasher.sha1.hexdigest()
                if found != job.sha1_blob:
                    self._drop(task)
                    raise DigestMismatchError(f"{job.what}: git blob id {found} is not the hub's {job.sha1_blob}")
            by_size = (job.size is not None or task.verified_by_length) and (not task.multi or task.etag is not None)
            verified = bool(job.sha256 or job.sha1_blob or by_size)  # pieces of no validator: maybe two versions
            os.fsync(task.fd)
            self.folder.replace(task.part, job.rel)
            self.folder.remove(task.state)
            result = {"path": job.rel, "size": size, "sha256": sha256, "verified": verified}
        except BaseException as exc:
            self._fail(exc)
            return
        with self.cond:
            self.results[job.rel] = result
            self.unfinished -= 1
            self.cond.notify_all()

    def _drop(self, task: FileTask) -> None:
        """A wrong file is never resumed from."""
        self.folder.remove(task.part)
        self.folder.remove(task.state)
