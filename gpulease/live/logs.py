"""``gpulease logs``: what an instance wrote about its bootstrap, its verification and its jobs, read from the
bucket, for one node (``--node N``; rank 0 by default), once or followed (bounded).

Read from the node's control area ``P = <checkpointUri>_gpulease/`` (rank N > 0: ``<checkpointUri>nodes/N/_gpulease/``):

- ``P/ready.json``: the bootstrap's checks (``ready``, ``failed``, ``checks`` each with its ``detail``);
- ``P/verify.json``: the verification's checks;
- ``P/jobs/<job>/log/<seq>.txt``: a job run through the job agent (``gpulease ephemeral``), in chunks;
- ``P/logs/<stack>/<experiment>/<name>``: the log files (``bootstrap.log``, ``verify-run.log``,
  ``verify-resume.log``, ``<session>.log`` of the job's tmux session; the layout is ``instance/log_upload.py``'s
  ``LOG_KEY``, which the instance's watchdog uploads with, every few minutes, redacted, at most the last 4 MiB of
  each); each is shown when it is there and otherwise named as missing, with where it is on the instance.

``--journal`` is what only a real instance shows: the systemd journal of the gpulease units, read over the stack's
access mode (``gpulease ssh STACK -- sudo journalctl ...``)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpulease.live.target import LiveError, Target
from instance import log_upload

LOG_FILES = log_upload.LOG_FILES
UNITS = ("gpulease-bootstrap.service", "gpulease-run.service", "gpulease-watchdog.service",
         "gpulease-job-agent.service")
"""The instance's units (``components/userdata/settings.py``, ``run_settings.py``; a test keeps them equal)."""
MAX_LOG_BYTES = 4 * 1024 * 1024
"""The most of one log object read at once (its tail): a terminal is not the place for more."""
MAX_KEYS = 10_000
FOLLOW_POLL_SECONDS = 5.0


def control_prefix(target: Target) -> tuple[str, str]:
    """(bucket, key prefix of the target's control area); a node's target (``nodes.node_target``) carries its own
    checkpoint URI already."""
    uri = target.checkpoint_uri
    if uri is None:
        raise LiveError(f"stack {target.stack!r}: no checkpoint bucket, where the instance leaves its logs; "
                        f"accepted: `gpulease logs {target.stack} --journal` (over SSH/SSM)")
    bucket, _, prefix = uri.split("://", 1)[1].partition("/")
    prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
    return bucket, f"{prefix}_gpulease/"


def _missing(exc: Exception) -> bool:
    code = (getattr(exc, "response", None) or {}).get("Error", {}).get("Code")
    return code in ("NoSuchKey", "404", "NotFound")


def _lines(body: bytes) -> list[str]:
    """The lines of a log, split at line feeds only: a lone CR (or another separator ``splitlines`` knows) stays
    in its line, where the command shows it escaped, instead of passing for a line end."""
    text = body.decode("utf-8", "replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


@dataclass
class LogReader:
    """Reads one node's logs; remembers how far each was read, so ``follow`` prints only what is new."""

    client: Any
    bucket: str
    prefix: str
    stack: str
    experiment: str
    session: str | None = None
    seen: dict[str, int] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)

    def _get(self, key: str, start: int = 0, *, tail: bool = False) -> bytes | None:
        """The object from ``start`` (at most ``MAX_LOG_BYTES``); with ``tail``, its last ``MAX_LOG_BYTES``
        (a suffix range: a long log's end is what matters), remembering its whole size in ``sizes``."""
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if start:
            kwargs["Range"] = f"bytes={start}-"
        elif tail:
            kwargs["Range"] = f"bytes=-{MAX_LOG_BYTES}"
        try:
            answer = self.client.get_object(**kwargs)
            body = answer["Body"].read(MAX_LOG_BYTES)
            total = str(answer.get("ContentRange") or "").rpartition("/")[2]
            self.sizes[key] = int(total) if total.isdigit() else start + len(body)
            return body
        except Exception as exc:
            if _missing(exc):
                return None
            code = (getattr(exc, "response", None) or {}).get("Error", {}).get("Code")
            if code == "InvalidRange":  # nothing beyond what was read
                return b""
            raise LiveError(f"cannot read s3://{self.bucket}/{key}: {code or ' '.join(str(exc).split())[:200]}") from None

    def _record(self, name: str) -> dict[str, Any] | None:
        body = self._get(f"{self.prefix}{name}")
        if body is None:
            return None
        try:
            doc = json.loads(body)
        except ValueError:
            return {"unreadable": f"{name} is not JSON"}
        return doc if isinstance(doc, dict) else {"unreadable": f"{name} is not a JSON object"}

    def _keys(self, prefix: str) -> list[str]:
        keys: list[str] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=prefix, PaginationConfig={"MaxItems": MAX_KEYS}):
            keys += [item["Key"] for item in page.get("Contents", [])]
        return sorted(keys)

    def records(self) -> list[str]:
        """The ready and verify records as lines (each check with its detail)."""
        out: list[str] = []
        for name, title in (("ready.json", "bootstrap"), ("verify.json", "verify")):
            doc = self._record(name)
            if doc is None:
                out.append(f"[{title}] no {name} yet")
                continue
            verdict = doc.get("ready", doc.get("passed"))
            state = "ok" if verdict else "FAILED" if verdict is False else "?"
            failed = ", ".join(doc.get("failed") or [])
            out.append(f"[{title}] {state} at {doc.get('time', '?')} on {doc.get('instanceId', '?')}"
                       + (f": {failed} failed" if failed else ""))
            for check, result in (doc.get("checks") or {}).items():
                if isinstance(result, dict):
                    mark = "skip" if result.get("ok") is None else "ok" if result.get("ok") else "FAIL"
                    out.append(f"[{title}]   {mark} {check}: {' '.join(str(result.get('detail', '')).split())}")
        return out

    def files(self, *, first: bool) -> list[str]:
        """New lines of the whole log files; on the first read, a line for each that is not uploaded."""
        out: list[str] = []
        names = [*LOG_FILES, *([f"{self.session}.log"] if self.session else [])]
        for name in names:
            key = self.prefix + log_upload.log_key(self.stack, self.experiment, name)
            start = self.seen.get(key, 0)
            body = self._get(key, start, tail=not start)
            if body is None:
                if first:
                    out.append(f"[{name}] not in the bucket yet (the instance copies it every few minutes once it "
                               f"is written; it is /data/logs/{name} there: --journal or gpulease ssh)")
                continue
            size = self.sizes.get(key, start + len(body))
            lines = _lines(body)
            if not start and size > len(body) and lines:
                # Read from its end: the first line is cut, and what came before is not shown.
                lines[0] = f"... ({size - len(body)} earlier bytes not read)"
            self.seen[key] = size
            out += [f"[{name}] {line}" for line in lines]
        return out

    def jobs(self) -> list[str]:
        """New chunks of every job-agent job, in order."""
        out: list[str] = []
        for key in self._keys(f"{self.prefix}jobs/"):
            if "/log/" not in key or key in self.seen:
                continue
            job = key[len(f"{self.prefix}jobs/"):].split("/", 1)[0]
            body = self._get(key) or b""
            self.seen[key] = len(body)
            out += [f"[job {job}] {line}" for line in _lines(body)]
        return out


def follow(reader: LogReader, emit: Callable[[str], None], minutes: float, *,
           sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
           first: Callable[[list[str]], list[str]] = list) -> bool:
    """Print what is there (through ``first``: the command's tail), then what is new every few seconds, for at
    most ``minutes`` (True when it ran out)."""
    for line in first([*reader.records(), *reader.files(first=True), *reader.jobs()]):
        emit(line)
    deadline = clock() + minutes * 60
    while clock() < deadline:
        sleep(FOLLOW_POLL_SECONDS)
        for line in [*reader.files(first=False), *reader.jobs()]:
            emit(line)
    return True


def journal_command(units: tuple[str, ...] = UNITS, lines: int = 200) -> list[str]:
    argv = ["sudo", "journalctl", "--no-pager", "-n", str(lines)]
    for unit in units:
        argv += ["-u", unit]
    return argv
