"""The instance's log files in the bucket, for whoever cannot log in (standard library only, Python 3.10).

The bootstrap writes ``<mount>/logs/bootstrap.log``, the verification ``verify-run.log`` and ``verify-resume.log``,
the job's tmux session ``<session>.log`` (``run_job.py``). Every ``log_upload_minutes`` (default 5) the watchdog's
loop calls ``LogUploader.tick``, which copies each file that changed since its last copy to

    <checkpoint_uri>_gpulease/logs/<stack>/<experiment>/<name>        (``log_key``; ``gpulease logs`` reads there)

with the settings' ``control_upload_command`` and the instance role, as the heartbeat goes. What is copied is a
redacted copy (``manifest.redact`` on every line: credentials in URLs, secret-named flags and keys, token-shaped
strings), of complete lines only (a line cut in the middle could hide a secret from the redaction), and at most
``MAX_UPLOAD_BYTES`` of it: the end of a longer file, after one line saying how much was left out. A file is read
strictly (a regular file, not through a link, never a FIFO or a device). Never blocking training: a copy runs as a
child process in its own group beside the loop, one at a time, killed after ``upload_timeout`` seconds; a failure
is logged and the file is tried again at the next round. The copy's bound is ``bounds.py``'s ``log_copy``.

When the watchdog ends the instance (the deadline, idle, a spot notice), its final sequence calls ``flush`` after
the final sync: the copy that runs is waited for, then every file changed since its last copy is copied, one after
another, the whole within ``bounds.py``'s ``log_flush`` (and the time left of the window); a copy still running at
the bound is killed and the shutdown goes on, so the last lines of the bootstrap, the verification and the job are
in the bucket when the instance is gone, and a hung copy never keeps it running.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

try:
    from instance import bounds, control, manifest
    from instance import cloud_access as ca
except ImportError:  # on the instance: the other tools are installed next to this file
    import bounds  # type: ignore[no-redef]
    import cloud_access as ca  # type: ignore[no-redef]
    import control  # type: ignore[no-redef]
    import manifest  # type: ignore[no-redef]

LOG_KEY = "logs/{stack}/{experiment}/{name}"
"""Below the control area (``<checkpoint_uri>_gpulease/``): the one layout ``gpulease logs`` reads too."""
LOG_FILES = ("bootstrap.log", "verify-run.log", "verify-resume.log")
"""Besides these, the job's ``<session>.log``."""
MAX_UPLOAD_BYTES = 4 * 1024 * 1024
"""The most of one file copied (its end): what ``gpulease logs`` reads of one object at most."""
READ_CHUNK = 1024 * 1024
DEFAULT_INTERVAL_MINUTES = 5.0
OUT_DIR = "logs-out"
"""Under the state directory: the redacted copies, one per log file, rewritten in place before each copy."""


def log_key(stack: str, experiment: str, name: str) -> str:
    """The key of one log file below the control area (``LOG_KEY``)."""
    return LOG_KEY.format(stack=stack, experiment=experiment, name=name)


def log_names(settings: dict[str, Any]) -> list[str]:
    """The files this instance uploads: the bootstrap's, the verification's and the job's session log."""
    job = settings.get("job") or {}
    session = job.get("session") if isinstance(job, dict) else None
    return [*LOG_FILES, *([f"{session}.log"] if isinstance(session, str) and session else [])]


def read_tail(path: str, limit: int = MAX_UPLOAD_BYTES) -> tuple[bytes, int] | None:
    """(the last complete lines of ``path``, at most ``limit`` bytes, and how many bytes before them were left
    out); None when the file is missing, not a regular file (a FIFO, a device, a directory) or a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if info.st_mode & 0o170000 != 0o100000:
            return None
        size = info.st_size
        start = max(0, size - limit)
        os.lseek(fd, start, os.SEEK_SET)
        parts, left = [], size - start
        while left > 0:
            chunk = os.read(fd, min(READ_CHUNK, left))
            if not chunk:
                break  # the file shrank while it was read
            parts.append(chunk)
            left -= len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    data = b"".join(parts)
    if start:  # begin at a whole line
        cut = data.find(b"\n")
        data = data[cut + 1:] if cut >= 0 else b""
        start = size - len(data)
    end = data.rfind(b"\n")
    return data[: end + 1], start


def redacted(data: bytes, skipped: int, path: str) -> bytes:
    """What is uploaded of a file: the same bytes, after a line for what was left out, except what
    ``manifest.redact`` removes from each line. Lines end at a line feed only, as ``gpulease logs`` reads them: a
    CR (a progress bar), a form feed or another character ``str.splitlines`` takes for a line end stays inside its
    line, which is redacted whole (so a flag and its value around such a character are seen together), and goes to
    the bucket as it was. Bytes that are not UTF-8 pass through unchanged (``surrogateescape``)."""
    text = data.decode("utf-8", "surrogateescape")
    out = manifest.redact_lines(text)
    if skipped:
        out = (f"[gpulease] the first {skipped} bytes are not uploaded; the whole file is {path} on the instance\n"
               + out)
    return out.encode("utf-8", "surrogateescape")


def write_private(path: str, data: bytes) -> None:
    """``data`` at ``path`` (0600) through a temporary file and a rename: a copy never reads half of it."""
    os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


class LogUploader:
    """Copies the changed log files to the bucket, one child process at a time, beside the watchdog's loop.

    ``dog`` is what the heartbeat reads from the watchdog (``s``, ``clock``, ``metadata``, ``credentials``,
    ``decide``)."""

    def __init__(self, dog: Any, *, names: Callable[[dict[str, Any]], list[str]] = log_names):
        self.dog = dog
        s = dog.s
        self.interval = 60 * float(s.get("log_upload_minutes") or DEFAULT_INTERVAL_MINUTES)
        self.upload_timeout = bounds.value("log_copy", s)
        self.enabled = bool(s.get("checkpoint_uri") and s.get("control_upload_command") and s.get("stack")
                            and s.get("experiment"))
        self.names = names(s)
        self.sent: dict[str, tuple[int, int]] = {}
        """name -> (size, mtime_ns) of the file when its last copy succeeded."""
        self.queue: list[str] = []
        self.last = float("-inf")
        self.job: ca.Bounded | None = None
        self.call: ca.StorageCall | None = None
        self.current: tuple[str, tuple[int, int]] | None = None
        self.preparing: tuple[str, tuple[int, int], threading.Thread, dict[str, Any], float] | None = None
        """The redacted copy being written on its own thread (name, stamp, thread, outcome, started): a big log's
        redaction never holds up the watchdog's loop, whose deadline checks run every tick."""

    def source(self, name: str) -> str:
        return os.path.join(self.dog.s.get("mount_point") or "/data", "logs", name)

    def tick(self) -> None:
        """Check the copy that runs, start the next one; a new round every ``interval`` seconds."""
        if not self.enabled:
            return
        self._check()
        if not self._prepared():
            return
        mono = self.dog.clock.monotonic()
        if not self.queue and self.job is None and mono - self.last >= self.interval:
            self.last = mono
            self.queue = self.changed()
        while self.job is None and self.preparing is None and self.queue:
            self._start(self.queue.pop(0))

    def _stamp(self, name: str) -> tuple[int, int] | None:
        try:
            info = os.lstat(self.source(name))
        except OSError:
            return None
        return (info.st_size, info.st_mtime_ns) if info.st_mode & 0o170000 == 0o100000 else None

    def _start(self, name: str) -> None:
        stamp = self._stamp(name)
        if stamp is None:
            return
        outcome: dict[str, Any] = {}
        thread = threading.Thread(target=self._prepare, args=(name, outcome), daemon=True,
                                  name=f"gpulease-redact-{name}")
        self.preparing = (name, stamp, thread, outcome, self.dog.clock.monotonic())
        thread.start()

    def _prepare(self, name: str, outcome: dict[str, Any]) -> None:
        """On its own thread: the file's tail, redacted, written where the copy reads it."""
        try:
            found = read_tail(self.source(name))
            if found is None or not found[0]:
                outcome["out"] = None  # gone, or no complete line yet
                return
            out = os.path.join(self.dog.s["state_dir"], OUT_DIR, name)
            write_private(out, redacted(found[0], found[1], self.source(name)))
            outcome["out"] = out
        except OSError as exc:
            outcome["error"] = exc

    def _prepared(self) -> bool:
        """True when no redacted copy is being written (the one that was is then copied); False while one is, for
        at most the copy's own bound."""
        if self.preparing is None:
            return True
        name, stamp, thread, outcome, started = self.preparing
        if thread.is_alive():
            if self.dog.clock.monotonic() - started < self.upload_timeout:
                return False
            self.preparing = None  # the thread ends on its own; this round goes on without the file
            self.dog.decide("log-upload", f"{name}: redacting took longer than {self.upload_timeout:g} s: not copied")
            return True
        self.preparing = None
        if "error" in outcome:
            self.dog.decide("log-upload", f"{name}: not copied to the bucket: {outcome['error']}")
        elif outcome.get("out"):
            self._copy(name, stamp, outcome["out"])
        return True

    def _copy(self, name: str, stamp: tuple[int, int], out: str) -> None:
        try:
            s = self.dog.s
            key = log_key(str(s["stack"]), str(s["experiment"]), name)
            call = control.upload_call(s, out, key, self.dog.metadata, self.dog.credentials,
                                       dst=control.checkpoint_area_uri(s, key))
        except (ca.CredentialsError, OSError) as exc:
            self.dog.decide("log-upload", f"{name}: not copied to the bucket: {exc}")
            return
        if call is None:
            return
        try:
            self.job = ca.Bounded(call.argv, env=call.env, monotonic=self.dog.clock.monotonic)
        except OSError as exc:
            call.close()
            self.dog.decide("log-upload", f"{name}: the copy could not start: {exc}")
            return
        self.call, self.current = call, (name, stamp)

    def _check(self) -> None:
        job = self.job
        if job is None or self.current is None:
            return
        code = job.poll()
        if code is None and self.dog.clock.monotonic() - job.started < self.upload_timeout:
            return
        self._settle(code, f"the copy took longer than {self.upload_timeout:g} s: killed")

    def _settle(self, code: int | None, killed: str) -> None:
        """The copy that runs is over: ``code`` its exit status, or None when it is killed now (``killed`` says
        why)."""
        job = self.job
        if job is None or self.current is None:
            return
        name, stamp = self.current
        if code is None:
            job.kill()
            self.dog.decide("log-upload", f"{name}: {killed}")
        elif code != 0:
            self.dog.decide("log-upload", f"{name}: the copy exited {code}: {job.tail()}")
        else:
            self.sent[name] = stamp
        job.finish()
        if self.call is not None:
            self.call.close()
        self.job = self.call = self.current = None

    def changed(self) -> list[str]:
        """The files changed since their last copy (or never copied)."""
        return [n for n in self.names if self._stamp(n) not in (None, self.sent.get(n))]

    def flush(self, budget: float) -> list[str]:
        """The last copy before the instance ends: the copy that runs, then every changed file, one at a time, the
        whole within ``budget`` seconds (the watchdog's clock; waited in real time as ``clock.real`` scales it). At
        the bound the copy that runs is killed and nothing more starts. Returns the names copied."""
        if not self.enabled:
            return []
        real = getattr(self.dog.clock, "real", None) or (lambda seconds: seconds)
        end = time.monotonic() + (real(budget) if budget > 0 else 0.0)
        each = real(self.upload_timeout)
        self.queue = []
        copied: list[str] = []
        tried: set[str] = set()
        while True:
            if self.preparing is not None:  # the redacted copy being written (this round's, or one flush started)
                name, _, thread, _, _ = self.preparing
                thread.join(max(0.0, min(end - time.monotonic(), each)))
                if thread.is_alive():
                    self.preparing = None  # the thread ends on its own; the shutdown does not wait for it
                    tried.add(name)  # nor starts another redaction of the same file
                    self.dog.decide("log-upload", f"{name}: redacting was still running at the final copy's "
                                    f"bound: not copied")
                    continue
                self._prepared()  # starts its copy, if there is anything to copy
                continue
            if self.job is None:
                todo = [n for n in self.changed() if n not in tried]
                if not todo or time.monotonic() >= end:
                    if todo:
                        self.dog.decide("log-upload", f"the final copy of the logs ran out of its {budget:.0f} s: "
                                        f"{', '.join(todo)} not copied")
                    return copied
                tried.add(todo[0])
                self._start(todo[0])
                continue
            started = time.monotonic()
            while self.job.poll() is None and time.monotonic() < min(end, started + each):
                time.sleep(bounds.value("log_flush_poll"))
            name = self.current[0] if self.current else ""
            code = self.job.poll()
            self._settle(code, f"the final copy was still running at its bound ({budget:.0f} s for the logs, "
                         f"{self.upload_timeout:g} s a file): killed, the shutdown goes on")
            if code == 0:
                copied.append(name)

    def stop(self) -> None:
        if self.job is not None:
            self.job.kill()
            self._check()
