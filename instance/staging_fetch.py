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
  Every request says ``Accept-Encoding: identity``; an answer with another ``Content-Encoding`` (``gzip``) is
  refused, naming it: its bytes are not the file's.
- **One pass of hashing.** The hash runs in file order: bytes written at the hashed frontier are hashed from the
  buffer they arrived in; bytes a later range wrote ahead of it are read back (``preadv`` into one buffer for each
  run of contiguous ranges; recently written, so from the page cache) when the frontier reaches them, once.
  Resuming after a reboot reads back what is already on disk.
- **No work per byte in Python.** Each connection receives into a 4 MiB buffer it keeps (``read_into``: one receive
  at most per call, the body's length counted as ``HTTPResponse.read1`` counts it), and each receive is written
  (``pwrite``) and hashed from that buffer at once, while still in the processor's cache.
- **Resume.** A piece cut short keeps what arrived; the rest goes back in the queue (with backoff). Across
  reboots ``<file>.part.json`` keeps what is on disk; a resumed range carries ``If-Range``.
- **Bounds.** Every read is bounded by the per-read timeout and the source's deadline (``staging_http``); a piece
  is tried ``attempts`` times at most.

This module is the HTTP side: the queue, the requests and what their answers must show. The part files (their
layout, resume state, restart and the checks before the rename) are ``staging_parts``.
"""

from __future__ import annotations

import http.client
import threading
import time
import urllib.parse
from collections import deque
from typing import Any

try:
    from instance import bounds
    from instance.staging_files import DigestMismatchError, Folder, StagingError
    from instance.staging_http import (
        TRANSIENT,
        Client,
        Deadline,
        DeadlineError,
        TransientError,
        ascii_digits,
        content_range,
        encoded_as,
        if_range_validator,
        next_wait,
        retry_after,
        transfer_coded_as,
    )
    from instance.staging_parts import FileJob, FileTask, PartFiles, Piece, SupersededError
except ImportError:  # on the instance: installed next to this file
    import bounds  # type: ignore[no-redef]
    from staging_files import DigestMismatchError, Folder, StagingError  # type: ignore[no-redef]
    from staging_http import (  # type: ignore[no-redef]
        TRANSIENT,
        Client,
        Deadline,
        DeadlineError,
        TransientError,
        ascii_digits,
        content_range,
        encoded_as,
        if_range_validator,
        next_wait,
        retry_after,
        transfer_coded_as,
    )
    from staging_parts import FileJob, FileTask, PartFiles, Piece, SupersededError  # type: ignore[no-redef]

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


class Engine(PartFiles):
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
            if resp.status in (200, 206) and (coding := encoded_as(resp)) is not None:
                raise StagingError(f"{job.what}: the server sent the file with Content-Encoding {coding!r}, not its "
                                   "own bytes (asked: Accept-Encoding: identity); refused")
            if resp.status in (200, 206) and (coding := transfer_coded_as(resp)) is not None:
                raise StagingError(f"{job.what}: the server sent the file with Transfer-Encoding {coding!r}, not its "
                                   "own bytes (only chunked framing is read); refused")
            if resp.status == 206:
                got, total = content_range(resp.getheader("Content-Range") or "")
                if got != start:
                    raise StagingError(f"{job.what}: asked for bytes from {start}, the server sent from {got}")
            elif resp.status == 200:
                total = None
                if not whole:  # a 200 to any ranged piece (bytes=0- too): it changed, or the server ignores Range
                    self._restart(task, piece)  # the whole file of the server's version, from 0, as one stream
                    start = 0
            else:
                body = resp.read(300).decode("utf-8", "replace")
                raise StagingError(f"{job.what}: {resp.gpulease_key[1]} answered {resp.status}: {body}")  # type: ignore[attr-defined]
            length = None if resp.chunked else resp.getheader("Content-Length")  # chunked overrides it (RFC 9112 §6.3)
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
