"""``gpulease logs``: what an instance wrote about its bootstrap, its verification and its jobs, read from the
bucket, for one node (``--node N``; rank 0 by default), once or followed (bounded).

Read from the node's control folder ``R = components.image_bake.control_folder(prefix)`` (``_gpulease/<prefix>control/``
at the bucket root, outside the prefix the checkpoint lifecycle expires; rank N > 0: its prefix ``<prefix>nodes/N/``):

- ``R/ready.json``: the bootstrap's checks (``ready``, ``failed``, ``checks`` each with its ``detail``);
- ``R/verify.json``: the verification's checks;

and from its control area ``P = <checkpointUri>_gpulease/`` (rank N > 0: ``<checkpointUri>nodes/N/_gpulease/``):

- ``P/jobs/<job>/log/<seq>.txt``: a job run through the job agent (``gpulease ephemeral``), in chunks;
- ``P/logs/<stack>/<experiment>/<name>``: the log files (``bootstrap.log``, ``verify-run.log``,
  ``verify-resume.log``, ``<session>.log`` of the job's tmux session; the layout is ``instance/log_upload.py``'s
  ``LOG_KEY``, which the instance's watchdog uploads with, every few minutes, redacted, at most the last 4 MiB of
  each); each is shown when it is there and otherwise named as missing, with where it is on the instance.

``--journal`` is what only a real instance shows: the systemd journal of the gpulease units, read over the stack's
access mode (``gpulease ssh STACK -- sudo journalctl ...``)."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from components.image_bake import control_folder
from gpulease.ephemeral import records
from gpulease.live.target import LiveError, Target
from gpulease.review.stack_commands import command
from instance import log_upload

LOG_FILES = log_upload.LOG_FILES
CONTROL_AREA = "_gpulease/"
"""The control area beside the checkpoints: the uploaded logs and the job channel."""
UNITS = ("gpulease-bootstrap.service", "gpulease-run.service", "gpulease-watchdog.service",
         "gpulease-job-agent.service")
"""The instance's units (``components/userdata/settings.py``, ``run_settings.py``; a test keeps them equal)."""
MAX_LOG_BYTES = 4 * 1024 * 1024
"""The most of one log object read at once (its tail): a terminal is not the place for more."""
MAX_LISTED = 10_000
"""The most job-log objects kept per read: the last in key order, which are the newest chunks (a job's chunks are
``<job>/log/<8-digit seq>.txt``); the older ones are named in one line."""
MAX_SCANNED = 200_000
"""The most objects one listing pages through to find the last ``MAX_LISTED`` (a bucket lists in key order only,
from the start): a bound on its calls (200 pages); ``READ_SECONDS`` bounds their time."""
LIST_PAGE = 1_000
"""Objects per listing call (the most S3 returns in one)."""
MAX_JOB_CHUNKS = 1_000
MAX_JOB_BYTES = 8 * 1024 * 1024
"""The most job-log chunks, and bytes of them, read per read: the newest."""
ANCHOR_BYTES = 1024
"""The bytes before where the last read of a log ended, that the next read looks for."""
READ_SECONDS = 120.0
"""The overall bound on one command's reads (one round of ``--follow``); each socket read has its own, shorter
timeout (``clients.TIMEOUTS``)."""
FOLLOW_POLL_SECONDS = 5.0


def control_prefix(target: Target) -> tuple[str, str]:
    """(bucket, key prefix of the target's control area); a node's target (``nodes.node_target``) carries its own
    checkpoint URI already."""
    uri = target.checkpoint_uri
    if uri is None:
        raise LiveError(f"stack {target.stack!r}: no checkpoint bucket, where the instance leaves its logs; "
                        f"accepted: `{command('logs', target.stack, target.path, '--journal')}` (over SSH/SSM)")
    bucket, _, prefix = uri.split("://", 1)[1].partition("/")
    prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
    return bucket, f"{prefix}{CONTROL_AREA}"


def _code(exc: BaseException) -> str | None:
    return (getattr(exc, "response", None) or {}).get("Error", {}).get("Code")


def _missing(exc: Exception) -> bool:
    return _code(exc) in ("NoSuchKey", "404", "NotFound")


class ReadFailedError(Exception):
    """A call to the bucket failed (an error answer, a redirect, a body cut short, a stall, the overall bound):
    the command's answer is "failed", exit 1 with the code ``read-failed``, never a user mistake."""

    code = "read-failed"


def _transport_errors() -> tuple[type[BaseException], ...]:
    """What a failed transfer raises (botocore's connection, timeout and stream errors, a socket's OSError); a
    missing credential or region is not one of them and stays the user's to fix (exit 2)."""
    from botocore import exceptions as bce

    return (bce.HTTPClientError, bce.ConnectionError, bce.ResponseStreamingError, bce.IncompleteReadError, OSError)


T = TypeVar("T")


def within(seconds: float, work: Callable[[], T], what: str) -> T:
    """``work()``'s result, or ``ReadFailedError`` when it is not done within ``seconds``: the overall bound over
    every read a command makes (a bucket that trickles one byte every half second never trips a per-read timeout).
    The work runs in a daemon thread, left behind when the bound is hit (the command ends right after)."""
    done: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(work())
        except BaseException as exc:  # handed to the caller's thread as it is
            failed.append(exc)

    worker = threading.Thread(target=run, name="gpulease-logs-read", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise ReadFailedError(f"{what}: the bucket did not answer in full within {seconds:g} s (a slow or stalled "
                              "connection); nothing more was read")
    if failed:
        raise failed[0]
    return done[0]


def _lines(body: bytes) -> list[str]:
    """The lines of a log, split at line feeds only: a lone CR (or another separator ``splitlines`` knows) stays
    in its line, where the command shows it escaped, instead of passing for a line end."""
    text = body.decode("utf-8", "replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


UNREAD_NOTE = "earlier bytes not read"
"""The first line of a log read from its end names how many bytes came before (``cli/logs.py`` words its tail
note by it)."""


@dataclass
class LogReader:
    """Reads one node's logs; remembers how far each was read, so ``follow`` prints only what is new.

    The instance uploads each log whole every few minutes (past ``MAX_LOG_BYTES`` only its last ``MAX_LOG_BYTES``,
    a window that moves), so a later read is checked against the bytes just before where the last one ended (its
    ``anchors``): the same bytes there, the log grew and what follows is new; found further back in the object's
    tail, the window moved and what follows them is new; nowhere, the log was rewritten (a rerun, a rotation) and
    its tail is shown again under a note. With ``whole_lines`` (``follow``), a last line without its line feed
    waits for the next round, so no line is ever printed in pieces."""

    client: Any
    bucket: str
    prefix: str
    stack: str
    experiment: str
    session: str | None = None
    seen: dict[str, int] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    anchors: dict[str, bytes] = field(default_factory=dict)
    whole_lines: bool = False
    rewritten_lines: int = 100
    """The last lines of a rewritten log shown again."""
    listing_said: bool = False
    """Whether the line about job-log objects not listed was printed (once per command)."""

    def _get(self, key: str, start: int | None = None, *, tail: bool = False) -> bytes | None:
        """The object from ``start`` (at most ``MAX_LOG_BYTES``); with ``tail``, its last ``MAX_LOG_BYTES``
        (a suffix range: a long log's end is what matters), remembering its whole size in ``sizes``."""
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if start is not None:
            kwargs["Range"] = f"bytes={start}-"
        elif tail:
            kwargs["Range"] = f"bytes=-{MAX_LOG_BYTES}"
        where = f"s3://{self.bucket}/{key}"
        try:
            answer = self.client.get_object(**kwargs)
            body = answer["Body"].read(MAX_LOG_BYTES)
        except Exception as exc:
            if _missing(exc):
                return None
            code = _code(exc)
            if code == "InvalidRange":  # nothing at or beyond ``start``
                return b""
            if code is None and not isinstance(exc, _transport_errors()):
                raise
            detail = code or " ".join(str(exc).split())[:200]
            raise ReadFailedError(f"cannot read {where}: {detail}") from None
        promised = answer.get("ContentLength")
        if isinstance(promised, int) and len(body) < min(promised, MAX_LOG_BYTES):
            # botocore checks the length only when a body is read to its end, not a capped read.
            raise ReadFailedError(f"cannot read {where}: the answer was cut short ({len(body)} of {promised} bytes)")
        total = str(answer.get("ContentRange") or "").rpartition("/")[2]
        self.sizes[key] = int(total) if total.isascii() and total.isdigit() and len(total) <= 20 else (start or 0) + len(body)
        return body

    @property
    def reports(self) -> str:
        """Where the instance reports ``ready.json`` and ``verify.json``: ``control_folder`` of the checkpoint prefix
        (``self.prefix`` less its ``_gpulease/``), at the bucket root, outside the prefix the lifecycle expires."""
        return control_folder(self.prefix.removesuffix(CONTROL_AREA))

    def _record(self, name: str) -> dict[str, Any] | None:
        body = self._get(f"{self.reports}{name}")
        if body is None:
            return None
        return records.read(name.removesuffix(".json"), body)

    def _listing(self, prefix: str) -> tuple[list[dict[str, Any]], int, bool]:
        """The last ``MAX_LISTED`` objects under ``prefix`` in key order (key, size, time) among the first
        ``MAX_SCANNED``, how many earlier ones were left out, and whether the listing reached the end."""
        kept: deque[dict[str, Any]] = deque(maxlen=MAX_LISTED)
        scanned = 0
        try:
            for page in self.client.get_paginator("list_objects_v2").paginate(
                    Bucket=self.bucket, Prefix=prefix,
                    PaginationConfig={"MaxItems": MAX_SCANNED + 1, "PageSize": LIST_PAGE}):
                for item in page.get("Contents", []):
                    scanned += 1
                    if scanned > MAX_SCANNED:
                        return list(kept), MAX_SCANNED - len(kept), False
                    kept.append(item)
        except Exception as exc:
            if _code(exc) is None and not isinstance(exc, _transport_errors()):
                raise
            raise ReadFailedError(f"cannot list s3://{self.bucket}/{prefix}: "
                                  f"{_code(exc) or ' '.join(str(exc).split())[:200]}") from None
        return list(kept), scanned - len(kept), True

    def records(self) -> list[str]:
        """The ready and verify records as lines (each check with its detail)."""
        out: list[str] = []
        for name, title in (("ready.json", "bootstrap"), ("verify.json", "verify")):
            doc = self._record(name)
            if doc is None:
                out.append(f"[{title}] no {name} yet")
                continue
            if "unreadable" in doc:  # read strictly (``ephemeral.records``): what is wrong, never "? on ?"
                out.append(f"[{title}] unreadable: {doc['unreadable']}")
                continue
            verdict = doc["ready" if name == "ready.json" else "passed"]
            state = "ok" if verdict is True else "FAILED"
            failed = ", ".join(doc.get("failed") or [])
            at = f" at {doc['time']}" if doc.get("time") else ""  # a record without its time: none shown, not "?"
            on = f" on {doc['instanceId']}" if doc.get("instanceId") else ""
            out.append(f"[{title}] {state}{at}{on}" + (f": {failed} failed" if failed else ""))
            for check, result in (doc.get("checks") or {}).items():
                if isinstance(result, dict):
                    mark = "skip" if result.get("ok") is None else "ok" if result.get("ok") else "FAIL"
                    out.append(f"[{title}]   {mark} {check}: {' '.join(str(result.get('detail', '')).split())}")
        return out

    def _take(self, key: str, body: bytes, offset: int, anchor: bytes) -> bytes:
        """The part of ``body`` (which starts at byte ``offset`` of the object) to show now; remembers where it
        ends and the bytes before that end."""
        used = body
        if self.whole_lines and len(body) < MAX_LOG_BYTES:
            used = body[: body.rfind(b"\n") + 1]  # an unfinished last line waits for its line feed
        self.seen[key] = offset + len(used)
        self.anchors[key] = (anchor + used)[-ANCHOR_BYTES:]
        return used

    def _log(self, key: str) -> list[str] | None:
        start = self.seen.get(key)
        if start is None:
            body = self._get(key, tail=True)
            if body is None:
                return None
            size = self.sizes.get(key, len(body))
            used = self._take(key, body, size - len(body), b"")
            lines = _lines(used)
            if size > len(body) and lines:
                # Read from its end: the first line is cut, and what came before is not shown.
                lines[0] = f"... ({size - len(body)} {UNREAD_NOTE})"
            return lines
        anchor = self.anchors.get(key, b"")
        body = self._get(key, start - len(anchor))
        if body is None:
            return []
        if body.startswith(anchor):  # the log grew (or did not change)
            return _lines(self._take(key, body[len(anchor):], start, anchor))
        body = self._get(key, tail=True) or b""
        size = self.sizes.get(key, len(body))
        at = body.find(anchor) if len(anchor) == ANCHOR_BYTES else -1
        if at >= 0:  # the window moved on: what follows the anchor is new
            offset = size - len(body) + at + len(anchor)
            return _lines(self._take(key, body[at + len(anchor):], offset, anchor))
        lines = _lines(self._take(key, body, size - len(body), b""))
        if size > len(body) and lines:
            lines = lines[1:]  # cut by the tail read
        hidden = max(0, len(lines) - self.rewritten_lines)
        return [f"... rewritten since the last read (the log started again or was rotated); its last "
                f"{len(lines) - hidden} lines follow" + (f", {hidden} earlier ones not shown" if hidden else ""),
                *lines[hidden:]]

    def files(self, *, first: bool) -> list[str]:
        """New lines of the whole log files; on the first read, a line for each that is not uploaded."""
        out: list[str] = []
        names = [*LOG_FILES, *([f"{self.session}.log"] if self.session else [])]
        for name in names:
            key = self.prefix + log_upload.log_key(self.stack, self.experiment, name)
            lines = self._log(key)
            if lines is None:
                if first:
                    out.append(f"[{name}] not in the bucket yet (the instance copies it every few minutes once it "
                               f"is written; it is /data/logs/{name} there: --journal or gpulease ssh)")
                continue
            out += [f"[{name}] {line}" for line in lines]
        return out

    def jobs(self) -> list[str]:
        """New chunks of every job-agent job, in order: the newest chunks first chosen (at most
        ``MAX_JOB_BYTES`` in all, ``MAX_JOB_CHUNKS`` chunks), each read once; a line says what was left out."""
        base = f"{self.prefix}jobs/"
        listed, skipped_objects, complete = self._listing(base)
        chunks = [item for item in listed if "/log/" in item["Key"] and item["Key"] not in self.seen]
        chunks.sort(key=lambda item: (str(item.get("LastModified", "")), item["Key"]), reverse=True)
        chosen: list[dict[str, Any]] = []
        budget = MAX_JOB_BYTES
        for item in chunks:
            size = int(item.get("Size") or 0)
            if len(chosen) >= MAX_JOB_CHUNKS or size > budget:
                break
            chosen.append(item)
            budget -= size
        out: list[str] = []
        left = chunks[len(chosen):]
        if left:
            skipped = sum(int(item.get("Size") or 0) for item in left)
            out.append(f"[jobs] ... {len(left)} older job log chunks ({skipped} bytes) not read (at most "
                       f"{MAX_JOB_CHUNKS} chunks, {MAX_JOB_BYTES} bytes per read; the newest are shown)")
            for item in left:  # said once, not read again on the next round
                self.seen[item["Key"]] = -1
        if (skipped_objects or not complete) and not self.listing_said:
            self.listing_said = True  # said once, not on every round of --follow
            if complete:
                out.append(f"[jobs] ... {skipped_objects} older objects under {base} not listed: only the last "
                           f"{MAX_LISTED} in key order (the newest chunks) are read")
            else:
                out.append(f"[jobs] ... more than {MAX_SCANNED} objects under {base}: the listing stopped there; of "
                           f"those the last {MAX_LISTED} in key order are read, the ones after them are not shown")
        for item in sorted(chosen, key=lambda item: item["Key"]):
            key = item["Key"]
            job = key[len(base):].split("/", 1)[0]
            body = self._get(key) or b""
            self.seen[key] = len(body)
            out += [f"[job {job}] {line}" for line in _lines(body)]
        return out


def read_all(reader: LogReader, seconds: float | None = None) -> list[str]:
    """The records, the log files and the jobs, within ``READ_SECONDS`` in all."""
    bound = READ_SECONDS if seconds is None else seconds
    return within(bound, lambda: [*reader.records(), *reader.files(first=True), *reader.jobs()],
                  f"reading the logs of {reader.stack!r}")


def follow(reader: LogReader, emit: Callable[[str], None], minutes: float, *,
           sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
           first: Callable[[list[str]], list[str]] = list) -> bool:
    """Print what is there (through ``first``: the command's tail), then what is new every few seconds, for at
    most ``minutes`` (True when it ran out); each round of reads within ``READ_SECONDS``."""
    reader.whole_lines = True
    for line in first(read_all(reader)):
        emit(line)
    deadline = clock() + minutes * 60
    while clock() < deadline:
        sleep(FOLLOW_POLL_SECONDS)
        for line in within(READ_SECONDS, lambda: [*reader.files(first=False), *reader.jobs()],
                           f"reading the logs of {reader.stack!r}"):
            emit(line)
    return True


def journal_command(units: tuple[str, ...] = UNITS, lines: int = 200) -> list[str]:
    argv = ["sudo", "journalctl", "--no-pager", "-n", str(lines)]
    for unit in units:
        argv += ["-u", unit]
    return argv
