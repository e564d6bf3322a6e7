#!/usr/bin/env python3
"""Downloads for staging: several files at once, a large file as parallel byte ranges, each written in place with
``pwrite`` into its ``.part`` file and hashed while the bytes stream (standard library only).

- **Pieces.** A file of known size above ``split_above`` is cut into pieces of ``piece_size`` (``Range: bytes=a-b``);
  a smaller file (or one of unknown size) is one piece, asked without ``Range`` (or ``bytes=N-`` to resume). Every
  piece of every file goes through one queue served by ``connections`` threads, so the number of connections is
  bounded and small files do not wait behind a large one. A server that answers a range with a 200 (it ignores
  ``Range``, or the file changed under ``If-Range``) is read as the whole file from 0, the other pieces dropped.
- **Checks.** Each 206 must start where it was asked (``Content-Range``), and its total must be the listed size;
  the file's size and its digest (SHA-256, or the hub's git blob id) are checked before the ``.part`` is renamed.
  A file with neither a listed size, a ``Content-Length`` nor a digest is returned "unverified", never "staged".
- **One pass of hashing.** The hash runs in file order: bytes written at the hashed frontier are hashed from the
  buffer they arrived in; bytes a later range wrote ahead of it are read back (``preadv`` into one buffer for each
  run of contiguous ranges; recently written, so from the page cache) when the frontier reaches them, once.
  Resuming after a reboot reads back what is already on disk.
- **No work per byte in Python.** Each connection receives into a 4 MiB buffer it keeps (``read_into``: one receive
  at most per call, the body's length counted as ``HTTPResponse.read1`` counts it), and each receive is written
  (``pwrite``) and hashed from that buffer at once, while still in the processor's cache.
- **Resume.** A piece cut short keeps what arrived; the rest goes back in the queue (with backoff). Across
  reboots ``<file>.part.json`` keeps the file's size, ETag and the ranges already on disk (written after an
  ``fdatasync`` of the part, so it never claims bytes the disk may not hold); a resumed range carries ``If-Range``.
- **Bounds.** Every read is bounded by the per-read timeout and the source's deadline (``staging_http``); a piece
  is tried ``attempts`` times at most.

Every file is opened through ``staging_files.Folder``: never through a symlink, never a FIFO or a device.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import threading
import time
import urllib.parse
from collections import deque
from dataclasses import dataclass, field
from typing import Any

try:
    from instance import bounds
    from instance.staging_files import DigestMismatchError, Folder, StagingError
    from instance.staging_hash import OrderedHash
    from instance.staging_http import (
        TRANSIENT,
        Client,
        Deadline,
        DeadlineError,
        TransientError,
        ascii_digits,
        content_range,
        if_range_validator,
        next_wait,
        retry_after,
    )
except ImportError:  # on the instance: installed next to this file
    import bounds  # type: ignore[no-redef]
    from staging_files import DigestMismatchError, Folder, StagingError  # type: ignore[no-redef]
    from staging_hash import OrderedHash  # type: ignore[no-redef]
    from staging_http import (  # type: ignore[no-redef]
        TRANSIENT,
        Client,
        Deadline,
        DeadlineError,
        TransientError,
        ascii_digits,
        content_range,
        if_range_validator,
        next_wait,
        retry_after,
    )

READ_BYTES = 4 * 1024 * 1024  # one connection's buffer: the most one receive takes from the socket


def read_into(resp: http.client.HTTPResponse, view: memoryview) -> int:
    """Bytes of ``resp``'s body received into ``view``, from one receive at most, as ``HTTPResponse.read1`` counts
    them (the body's length, the connection closed at its end), without a new buffer for every receive. 0: the body
    ended (or the server closed the connection)."""
    fp = resp.fp
    if fp is None or resp.chunked or not hasattr(fp, "readinto1"):
        data = resp.read1(len(view))
        view[:len(data)] = data
        return len(data)
    length = resp.length
    if length is not None and len(view) > length:
        view = view[:length]
    n = fp.readinto1(view)
    if not n and len(view):
        resp._close_conn()  # type: ignore[attr-defined]  # what read1 does at the body's end
    elif length is not None:
        resp.length = length - n
        if not resp.length:
            resp._close_conn()  # type: ignore[attr-defined]
    return n


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


class Engine:
    """Downloads ``FileJob``s into ``folder`` with ``connections`` threads; ``run`` returns one result per job."""

    def __init__(self, folder: Folder, client: Client, deadline: Deadline, *, connections: int = 8,
                 piece_size: int = 64 * 1024 * 1024, split_above: int = 128 * 1024 * 1024, attempts: int = 5,
                 retry_pause: float = 2.0, log: Any = print) -> None:
        self.folder = folder
        self.client = client
        self.deadline = deadline
        self.connections = max(1, connections)
        self.piece_size = max(1, piece_size)
        self.split_above = split_above
        self.attempts = attempts
        self.retry_pause = retry_pause
        self.log = log
        self.queue: deque[tuple[FileTask, Piece]] = deque()
        self.cond = threading.Condition()
        self.failure: BaseException | None = None
        self.results: dict[str, dict[str, Any]] = {}
        self.unfinished = 0
        self.reported = time.monotonic()
        self.moved = 0
        self._buffers = threading.local()  # each connection's read buffer, reused for every piece it downloads

    # -- set-up -----------------------------------------------------------------------------------------------

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

    # -- the run ----------------------------------------------------------------------------------------------

    def run(self, jobs: list[FileJob]) -> list[dict[str, Any]]:
        tasks = []
        try:
            for job in jobs:
                task = self.prepare(job)
                tasks.append(task)
                todo = self.pieces(task)
                for done_start, done_end in task.done:
                    task.hasher.wrote(done_start, None, done_end)  # what a reboot left on disk: hashed from it
                task.open_pieces = len(todo)
                self.unfinished += 1
                if not todo:
                    self._finish(task)
                self._close(task)  # opened again while a piece is written: at most one per worker
                self.queue.extend((task, p) for p in todo)
            threads = [threading.Thread(target=self._worker, daemon=True, name=f"staging-{i}")
                       for i in range(min(self.connections, max(1, len(self.queue))))]
            for t in threads:
                t.start()
            with self.cond:
                while self.unfinished and self.failure is None:
                    left = self.deadline.left()
                    if left <= 0:
                        self.failure = DeadlineError(f"past {self.deadline.what} ({self.deadline.seconds:g} s) "
                                                     "while downloading")
                        break
                    self.cond.wait(min(left, bounds.value("staging_poll")))
                self.cond.notify_all()
            for t in threads:
                t.join(max(0.1, min(self.client.timeout, self.deadline.left() + bounds.value("thread_join_slack"))))
            if self.failure is not None:
                raise self.failure
        finally:
            for task in tasks:
                with task.lock:  # a worker past its join writes under this lock: it finds no descriptor, not another's
                    self._close(task)
        return [self.results[j.rel] for j in jobs]

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

    def _worker(self) -> None:
        try:
            while True:
                with self.cond:
                    item = None
                    while self.failure is None and self.unfinished:
                        now = time.monotonic()
                        for i, (task, piece) in enumerate(self.queue):
                            if piece.not_before <= now:
                                item = (task, piece)
                                del self.queue[i]
                                break
                        if item is not None:
                            break
                        self.cond.wait(bounds.value("staging_worker_poll"))
                    if item is None:
                        return
                task, piece = item
                if piece.generation != task.generation:
                    continue
                try:
                    with self.held(task):
                        self._piece(task, piece)
                except SupersededError:
                    continue
                except TransientError as exc:
                    self._again(task, piece, exc)
                except BaseException as exc:
                    self._fail(exc)
                    return
        finally:
            self.client.close()

    def _fail(self, exc: BaseException) -> None:
        with self.cond:
            if self.failure is None:
                self.failure = exc
            self.cond.notify_all()

    def _again(self, task: FileTask, piece: Piece, exc: TransientError) -> None:
        piece.attempt += 1
        problem = str(exc)
        if piece.attempt >= self.attempts:
            self._fail(StagingError(f"{task.job.what}: gave up after {self.attempts} attempts: {problem}"))
            return
        try:  # the server's Retry-After (capped) within the deadline, as for listings
            wait = next_wait(exc, piece.attempt, self.retry_pause, self.deadline, task.job.what)
        except DeadlineError as late:
            self._fail(late)
            return
        self.log(f"staging {task.job.what}: {problem}; resuming from byte {piece.start} "
                 f"(attempt {piece.attempt}/{self.attempts})")
        piece.not_before = time.monotonic() + wait
        with self.cond:
            self.queue.appendleft((task, piece))
            self.cond.notify_all()

    def _piece(self, task: FileTask, piece: Piece) -> None:
        job = task.job
        headers = {"Accept-Encoding": "identity"}
        whole = not task.multi and piece.start == 0
        if not whole:
            last = "" if piece.end is None else str(piece.end - 1)
            headers["Range"] = f"bytes={piece.start}-{last}"
            if task.etag:
                headers["If-Range"] = task.etag
        resp, _ = self.client.open(job.url, headers)
        finished = False
        try:
            start = piece.start
            if resp.status == 416 and start and task.size in (None, start) and not task.multi:
                _, total = content_range(resp.getheader("Content-Range") or "", unsatisfied=True)
                if total != start or if_range_validator(resp) != task.etag:  # another version: never renamed in
                    self._restart(task, piece, "its 416 names another length or validator than the part's")
                    raise TransientError(f"{job.what}: the file on the server is not the part on disk; from 0")
                finished = True
                self._piece_done(task, piece, start)
                return
            if resp.status in TRANSIENT:
                raise TransientError(f"{urllib.parse.urlsplit(job.url).netloc} answered {resp.status}",
                                     retry_after(resp))
            if resp.status == 206:
                got, total = content_range(resp.getheader("Content-Range") or "")
                if got != start:
                    raise StagingError(f"{job.what}: asked for bytes from {start}, the server sent from {got}")
            elif resp.status == 200:
                total = None
                if start:
                    self._restart(task, piece)  # the whole file again: it changed, or the server ignores Range
                    start = 0
            else:
                body = resp.read(300).decode("utf-8", "replace")
                raise StagingError(f"{job.what}: {resp.gpulease_key[1]} answered {resp.status}: {body}")  # type: ignore[attr-defined]
            length = resp.getheader("Content-Length")
            if total is None and resp.status == 200 and length and ascii_digits(length.strip()):  # 206 */: unknown
                total = int(length) + (start if resp.status == 206 else 0)
            if total is not None and task.size is not None and total != task.size:
                raise DigestMismatchError(f"{job.what}: the server has {total} bytes, the listing said {task.size}")
            with task.lock:
                if total is not None:
                    task.size = total
                    task.verified_by_length = True
                etag = if_range_validator(resp)
                if resp.status == 206 and (etag is None or (task.etag is not None and etag != task.etag)):
                    changed = True  # If-Range ignored, or nothing shows these bytes are of the file's other pieces
                elif etag != task.etag:
                    changed, task.etag = False, etag
                    if not task.multi:
                        self.folder.write_json(task.state, {"mode": "stream", "size": task.size, "etag": etag})
                else:
                    changed = False
            if changed:
                self._restart(task, piece, "its range answer has no validator (strong ETag or Last-Modified) or "
                              "another one")
                raise TransientError(f"{job.what}: no validator shows these bytes are of the file already on disk "
                                     f"(the server's is {etag}); downloading it again from 0, as one stream")
            end = piece.end if piece.end is not None and task.multi else task.size
            pos, problem = self._stream(task, piece, resp, start, end)
            finished = problem is None and (end is None or pos >= end)
            if not finished:
                self._partial(task, piece, start, pos)
                raise TransientError(problem or f"the connection closed at byte {pos} of {end}")
            if end is not None and end == task.size and resp.length is None and read_into(resp, self._buffer()[:1]):
                finished = False  # a body with no length (chunked, or up to the close) that goes on past the file's
                raise StagingError(f"{job.what}: the server sent more than the listing's {end} bytes")
            self._piece_done(task, piece, pos, start)
        except (OSError, http.client.HTTPException) as exc:
            self.deadline.check(f"downloading {job.what}")
            raise TransientError(f"the connection was cut ({type(exc).__name__}: {exc})") from exc
        finally:
            if finished:
                self.client.release(resp)
            else:
                resp.gpulease_conn.close()  # type: ignore[attr-defined]

    def _buffer(self) -> memoryview:
        view = getattr(self._buffers, "view", None)
        if view is None:
            view = self._buffers.view = memoryview(bytearray(READ_BYTES))
        return view

    def _stream(self, task: FileTask, piece: Piece, resp: http.client.HTTPResponse, start: int,
                end: int | None) -> tuple[int, str | None]:
        """Read the body into the part file from ``start``: (where it stopped, why it was cut or None).

        Each receive lands in this connection's buffer and is written (``pwrite``) and hashed from it at once,
        while its bytes are still in the processor's cache; nothing is copied or allocated per receive."""
        conn = resp.gpulease_conn  # type: ignore[attr-defined]
        generation = piece.generation
        buffer = self._buffer()
        size = len(buffer)
        pos = start
        while end is None or pos < end:
            if self.failure is not None:
                raise StagingError("stopped")
            self.deadline.check(f"downloading {task.job.what} (at byte {pos})")
            self.client.bound_reads(conn)
            try:
                # One receive at most per call (a server trickling a byte at a time still reaches the deadline
                # check between receives).
                n = read_into(resp, buffer if end is None or end - pos >= size else buffer[:end - pos])
            except (OSError, http.client.HTTPException) as exc:
                self.deadline.check(f"downloading {task.job.what} (at byte {pos})")
                return pos, f"the connection was cut at byte {pos} ({type(exc).__name__}: {exc})"
            if not n:
                if end is not None and pos < end and not resp.isclosed() and resp.length:
                    return pos, f"the connection closed at byte {pos} of {end}"
                break
            pos = self._write(task, generation, buffer, pos, n)
        return pos, None

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
