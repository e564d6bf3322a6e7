#!/usr/bin/env python3
"""gpulease-watchdog: the instance-side guard for one experiment (standard library only).

Runs as a systemd service (``Restart=always``) and reads its settings from the JSON file that user-data writes
(``/etc/gpulease/settings.json``; ``GPULEASE_SETTINGS`` points elsewhere). Each tick it checks, in order:

1. the hard deadline: the warning hook ``warn_minutes`` before it, then the checkpoint hook, a final sync of
   ``<mount>/checkpoints`` and a shutdown ``final_sync_minutes`` before it;
2. a spot interruption notice (AWS IMDSv2 instance-action / rebalance, Alibaba termination-time): checkpoint
   hook, sync, shutdown, all fitted into the notice window;
3. idle: GPU utilization below ``idle_gpu_percent`` for ``idle_minutes`` with no busy marker and no live SSH
   session: sync, then shutdown;
4. the periodic checkpoint sync every ``checkpoint_interval_minutes``, in the background.

Every decision is logged with its reason. The metadata service timing out or failing is logged and never stops
the loop: the deadline and idle checks keep running. ``GPULEASE_CLOCK_SPEED`` / ``GPULEASE_CLOCK_START``
accelerate the clock so that the whole behaviour can be exercised in seconds.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from typing import Any

UTC = timezone.utc  # noqa: UP017 - the instance may run Python 3.10 (Ubuntu 22.04), before datetime.UTC

SETTINGS_PATH = "/etc/gpulease/settings.json"

DEFAULTS: dict[str, Any] = {
    "cloud": "aws",
    "region": "",
    "market": "spot",
    "mount_point": "/data",
    "idle_minutes": 30,
    "idle_gpu_percent": 5,
    "idle_check_seconds": 60,
    "warn_minutes": 15,
    "warn_hook": None,
    "final_sync_minutes": 5,
    "checkpoint_uri": None,
    "checkpoint_interval_minutes": 15,
    "checkpoint_hook": None,
    "checkpoint_signal": None,
    "checkpoint_process": None,
    "hook_timeout_seconds": 120,
    "busy_marker": "/data/busy",
    "busy_marker_max_age_minutes": 0,
    "on_rebalance": "checkpoint",
    "poll_seconds": 5,
    "metadata_url": None,
    "metadata_timeout_seconds": 2,
    "sync_command": None,
    "shutdown_command": ["shutdown", "-h", "now"],
    "nvidia_smi": "nvidia-smi",
    "proc_root": "/proc",
    "log_file": None,
    "exit_after_shutdown": False,
}

METADATA_URLS = {"aws": "http://169.254.169.254", "alicloud": "http://100.100.100.200"}
TOKEN_HEADERS = {
    "aws": ("X-aws-ec2-metadata-token-ttl-seconds", "X-aws-ec2-metadata-token"),
    "alicloud": ("X-aliyun-ecs-metadata-token-ttl-seconds", "X-aliyun-ecs-metadata-token"),
}
TOKEN_TTL_SECONDS = 21600
# A notice whose time cannot be read still leaves the documented minimum: two minutes on AWS, five on Alibaba.
NOTICE_WINDOW_SECONDS = {"aws": 120, "alicloud": 300}
# Kept free at the end of a notice window for the shutdown itself.
SHUTDOWN_RESERVE_SECONDS = 10
SSH_SESSION = re.compile(r"^(sshd|sshd-session): \S+@")

log = logging.getLogger("gpulease-watchdog")


# --- time ----------------------------------------------------------------------------------------------------


class Clock:
    """Wall-clock time, optionally accelerated: ``speed`` virtual seconds pass per real second."""

    def __init__(self, speed: float = 1.0, start: float | None = None):
        self.speed = speed
        self._start = start
        self._real0 = time.monotonic()
        self._wall0 = time.time() if start is None else start

    @classmethod
    def from_env(cls, env: dict[str, str]) -> Clock:
        speed = float(env.get("GPULEASE_CLOCK_SPEED") or 1.0)
        start = env.get("GPULEASE_CLOCK_START")
        return cls(speed=speed, start=float(start) if start else None)

    def now(self) -> float:
        if self._start is None and self.speed == 1.0:
            return time.time()  # follows NTP corrections, which matter for a deadline
        return self._wall0 + (time.monotonic() - self._real0) * self.speed

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds) / self.speed)

    def real(self, seconds: float) -> float:
        """Virtual seconds as real seconds, for subprocess and socket timeouts."""
        return max(0.05, seconds / self.speed)


def parse_time(value: str) -> float:
    """RFC 3339 / ISO 8601 UTC text as epoch seconds."""
    text = value.strip().replace("Z", "+00:00")
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- the metadata service ------------------------------------------------------------------------------------


class MetadataError(Exception):
    """The metadata service timed out, refused or answered with an unexpected status."""


class Metadata:
    """AWS IMDSv2 (token required) or Alibaba Cloud's metadata service (token when hardened mode is on)."""

    def __init__(self, cloud: str, base_url: str, timeout: float, clock: Clock):
        self.cloud = cloud
        self.base = base_url.rstrip("/")
        self.timeout = timeout
        self.clock = clock
        self._token: str | None = None
        self._token_expiry = 0.0

    def _request(self, method: str, path: str, headers: dict[str, str]) -> tuple[int, str]:
        req = urllib.request.Request(self.base + path, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.clock.real(self.timeout)) as resp:
                return resp.status, resp.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            return exc.code, ""
        except (OSError, ValueError) as exc:
            raise MetadataError(f"{method} {path}: {exc}") from exc

    def _token_header(self) -> dict[str, str]:
        ttl_header, token_header = TOKEN_HEADERS[self.cloud]
        if self._token is None or self.clock.now() >= self._token_expiry:
            status, body = self._request("PUT", "/latest/api/token", {ttl_header: str(TOKEN_TTL_SECONDS)})
            if status == 200 and body:
                self._token = body.strip()
                self._token_expiry = self.clock.now() + TOKEN_TTL_SECONDS - 60
            elif self.cloud == "aws":
                raise MetadataError(f"PUT /latest/api/token answered {status}")
            else:
                return {}  # Alibaba Cloud in normal mode serves metadata without a token.
        return {token_header: self._token} if self._token else {}

    def get(self, path: str) -> tuple[int, str]:
        status, body = self._request("GET", path, self._token_header())
        if status == 401:  # the token expired early (e.g. the clock jumped): fetch a new one once
            self._token = None
            status, body = self._request("GET", path, self._token_header())
        if status not in (200, 404):
            raise MetadataError(f"GET {path} answered {status}")
        return status, body


# --- the watchdog --------------------------------------------------------------------------------------------


class Watchdog:
    def __init__(self, settings: dict[str, Any], clock: Clock | None = None):
        self.s = {**DEFAULTS, **settings}
        self.clock = clock or Clock()
        self.cloud = self.s["cloud"]
        self.deadline = parse_time(self.s["deadline"])
        self.metadata = Metadata(
            self.cloud,
            self.s["metadata_url"] or METADATA_URLS.get(self.cloud, METADATA_URLS["aws"]),
            float(self.s["metadata_timeout_seconds"]),
            self.clock,
        )
        now = self.clock.now()
        self.started = now
        self.idle_since: float | None = None
        self.last_idle_check = float("-inf")
        self.last_poll = float("-inf")
        self.last_sync = now
        self.sync_proc: subprocess.Popen | None = None
        self.sync_output: Any = None
        self.warned = False
        self.rebalance_seen = False
        self.metadata_failing = False
        self.role: str | None = None
        self.shutdown_at: float | None = None
        self.done = False

    # -- the loop --

    def run(self, max_ticks: int | None = None) -> None:
        self.decide(
            "start",
            f"deadline {stamp(self.deadline)}, idle after {self.s['idle_minutes']} min below "
            f"{self.s['idle_gpu_percent']}% GPU, sync every {self.s['checkpoint_interval_minutes']} min to "
            f"{self.s['checkpoint_uri'] or 'nowhere (no checkpoint URI)'}, market {self.s['market']}",
        )
        ticks = 0
        while not self.done and (max_ticks is None or ticks < max_ticks):
            try:
                self.tick()
            except Exception as exc:  # one bad tick must never end the guard
                log.exception("tick failed: %s", exc)
            ticks += 1
            if not self.done:
                self.clock.sleep(float(self.s["poll_seconds"]))

    def tick(self) -> None:
        now = self.clock.now()
        self._reap_sync()
        if self.shutdown_at is not None:
            # Still alive after a shutdown was requested: ask again every minute.
            if now - self.shutdown_at >= 60:
                self.shutdown("the earlier shutdown request has not taken effect")
            return
        final_at = self.deadline - 60 * float(self.s["final_sync_minutes"])
        if now >= final_at:
            self.finish(
                "deadline",
                f"deadline {stamp(self.deadline)} is {max(0, self.deadline - now) / 60:.1f} min away "
                f"(final sync starts {self.s['final_sync_minutes']} min before it)",
                window_end=self.deadline,
            )
            return
        if not self.warned and now >= self.deadline - 60 * float(self.s["warn_minutes"]):
            self.warned = True
            self.decide("deadline-warning", f"deadline {stamp(self.deadline)} is {(self.deadline - now) / 60:.1f} min away")
            if self.s["warn_hook"]:
                self.run_command("warn-hook", self.s["warn_hook"], float(self.s["hook_timeout_seconds"]), "deadline")
        if self.s["market"] == "spot" and now - self.last_poll >= float(self.s["poll_seconds"]):
            self.last_poll = now
            if self.check_spot():
                return
        if now - self.last_idle_check >= float(self.s["idle_check_seconds"]):
            self.last_idle_check = now
            if self.check_idle(now):
                return
        interval = 60 * float(self.s["checkpoint_interval_minutes"])
        if self.s["checkpoint_uri"] and now - self.last_sync >= interval:
            self.last_sync = now
            self.start_periodic_sync()

    # -- decisions --

    def decide(self, event: str, reason: str) -> None:
        log.info("%s: %s", event, reason)

    def finish(self, cause: str, reason: str, window_end: float | None, hook: bool = True) -> None:
        """Checkpoint hook, final sync, shutdown, in that order, each fitted into the time left."""
        self.decide(cause, reason + " -> " + ("checkpoint hook, " if hook else "") + "final sync, shutdown")
        if hook:
            self.checkpoint_hook(cause, window_end)
        self.final_sync(window_end)
        self.shutdown(reason)

    def check_spot(self) -> bool:
        try:
            notice = self.spot_notice()
        except MetadataError as exc:
            if not self.metadata_failing:
                self.decide("metadata-error", f"{exc}; spot notices cannot be seen until it answers, carrying on")
            self.metadata_failing = True
            return False
        if self.metadata_failing:
            self.decide("metadata-recovered", "the metadata service answers again")
            self.metadata_failing = False
        if notice is None:
            return False
        kind, detail, window_end = notice
        if kind == "interruption":
            self.finish("spot-interruption", detail, window_end)
            return True
        if self.rebalance_seen:
            return False
        self.rebalance_seen = True
        action = self.s["on_rebalance"]
        if action == "shutdown":
            self.finish("spot-rebalance", detail + " (on_rebalance: shutdown)", None)
            return True
        if action == "checkpoint":
            self.decide("spot-rebalance", detail + " (on_rebalance: checkpoint) -> checkpoint hook, sync; keep running")
            self.checkpoint_hook("rebalance", None)
            self.final_sync(None)
            self.last_sync = self.clock.now()
        else:
            self.decide("spot-rebalance", detail + " (on_rebalance: ignore) -> nothing")
        return False

    def spot_notice(self) -> tuple[str, str, float | None] | None:
        """('interruption' | 'rebalance', what was seen, end of the notice window) or None."""
        now = self.clock.now()
        default_end = now + NOTICE_WINDOW_SECONDS.get(self.cloud, 120)
        if self.cloud == "alicloud":
            status, body = self.metadata.get("/latest/meta-data/instance/spot/termination-time")
            if status == 200 and body.strip():
                end = _time_or(body, default_end)
                return "interruption", f"spot instance to be released at {body.strip()}", end
            return None
        status, body = self.metadata.get("/latest/meta-data/spot/instance-action")
        if status == 200 and body.strip():
            try:
                notice = json.loads(body)
            except json.JSONDecodeError:
                notice = {}
            when = str(notice.get("time", ""))
            end = _time_or(when, default_end)
            return "interruption", f"spot instance-action {notice.get('action', body.strip())} at {when or 'unknown'}", end
        status, body = self.metadata.get("/latest/meta-data/events/recommendations/rebalance")
        if status == 200 and body.strip():
            try:
                when = str(json.loads(body).get("noticeTime", ""))
            except (json.JSONDecodeError, AttributeError):
                when = body.strip()
            return "rebalance", f"rebalance recommendation noticed at {when or 'unknown'}", None
        return None

    def check_idle(self, now: float) -> bool:
        threshold = float(self.s["idle_gpu_percent"])
        gpus, error = self.gpu_utilization()
        if error is not None:
            self.idle_since = None
            self.decide("not-idle", f"GPU state unknown ({error}); never shut down on a guess")
            return False
        top = max(u for u, _ in gpus)
        memory = ", ".join(f"{m:g} MiB" for _, m in gpus)
        if top >= threshold:
            self.idle_since = None
            self.decide("not-idle", f"GPU utilization {top:g}% >= {threshold:g}% (memory used {memory})")
            return False
        busy = self.busy_reason(now)
        if busy:
            self.idle_since = None
            self.decide("not-idle", f"GPU utilization {top:g}% < {threshold:g}% but {busy}")
            return False
        if self.idle_since is None:
            self.idle_since = now
        idle_for = now - self.idle_since
        limit = 60 * float(self.s["idle_minutes"])
        if idle_for >= limit:
            self.finish(
                "idle-shutdown",
                f"GPU utilization below {threshold:g}% for {idle_for / 60:.1f} min (limit {self.s['idle_minutes']} min), "
                "no busy marker, no live SSH session",
                None,
                hook=False,
            )
            return True
        self.decide("idle", f"GPU utilization {top:g}% < {threshold:g}% for {idle_for / 60:.1f} of {self.s['idle_minutes']} min")
        return False

    # -- what the checks look at --

    def gpu_utilization(self) -> tuple[list[tuple[float, float]], str | None]:
        cmd = [self.s["nvidia_smi"], "--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits"]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=self.clock.real(30), check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return [], f"nvidia-smi failed: {exc}"
        if out.returncode != 0:
            return [], f"nvidia-smi exited {out.returncode}: {out.stderr.strip()[:200]}"
        gpus = []
        for line in out.stdout.splitlines():
            if not line.strip():
                continue
            try:
                util, mem = (float(part.strip()) for part in line.split(",")[:2])
            except ValueError:
                return [], f"nvidia-smi printed {line.strip()!r}"
            gpus.append((util, mem))
        if not gpus:
            return [], "nvidia-smi listed no GPU"
        return gpus, None

    def busy_reason(self, now: float) -> str | None:
        marker = self.s["busy_marker"]
        if marker and os.path.exists(marker):
            max_age = 60 * float(self.s["busy_marker_max_age_minutes"])
            try:
                age = max(0.0, now - os.stat(marker).st_mtime)
            except OSError:
                age = 0.0
            if not max_age or age <= max_age:
                return f"busy marker {marker} is present"
            self.decide("busy-marker-stale", f"{marker} last touched {age / 60:.0f} min ago (> {max_age / 60:.0f} min): ignored")
        sessions = self.login_sessions()
        if sessions:
            return f"{len(sessions)} live session(s): {', '.join(sessions[:3])}"
        return None

    def login_sessions(self) -> list[str]:
        found = []
        for cmdline in _cmdlines(self.s["proc_root"]):
            if SSH_SESSION.match(cmdline) or "ssm-session-worker" in cmdline:
                found.append(cmdline)
        return found

    # -- actions --

    def run_command(self, what: str, command: str | list[str], timeout: float, reason: str) -> bool:
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else command
        env = {**os.environ, "GPULEASE_REASON": reason, "GPULEASE_CHECKPOINT_DIR": self.checkpoint_dir}
        started = self.clock.now()
        try:
            # Its own session, so that a hook cut short goes with everything it started.
            proc = subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True
            )
            stdout, stderr = proc.communicate(timeout=self.clock.real(timeout))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            self.decide(what, f"did not finish within {timeout:.0f} s; going on")
            return False
        except OSError as exc:
            self.decide(what, f"could not run: {exc}")
            return False
        took = self.clock.now() - started
        tail = (stderr or stdout).strip()[-300:]
        self.decide(what, f"exited {proc.returncode} after {took:.0f} s" + (f": {tail}" if tail else ""))
        return proc.returncode == 0

    def checkpoint_hook(self, reason: str, window_end: float | None) -> None:
        hook, sig, process = self.s["checkpoint_hook"], self.s["checkpoint_signal"], self.s["checkpoint_process"]
        if not hook and not sig:
            self.decide("checkpoint-hook", "none configured; syncing what is in the checkpoint directory")
            return
        budget = float(self.s["hook_timeout_seconds"])
        if window_end is not None:
            # Leave at least half of what remains of the notice window to the sync.
            budget = max(1.0, min(budget, (window_end - self.clock.now() - SHUTDOWN_RESERVE_SECONDS) / 2))
        if hook:
            self.run_command("checkpoint-hook", hook, budget, reason)
        if sig:
            self.signal_process(sig, process, budget)

    def signal_process(self, sig_name: str, pattern: str, budget: float) -> None:
        signum = getattr(signal, sig_name, None)
        pids = [pid for pid, cmd in _processes(self.s["proc_root"]) if pattern in cmd and pid != os.getpid()]
        if signum is None or not pids:
            self.decide("checkpoint-signal", f"no process matching {pattern!r} to send {sig_name} to")
            return
        for pid in pids:
            try:
                os.kill(pid, signum)
            except OSError as exc:
                self.decide("checkpoint-signal", f"{sig_name} to {pid} failed: {exc}")
        self.decide("checkpoint-signal", f"sent {sig_name} to {pids} ({pattern!r}); waiting up to {budget:.0f} s for them to exit")
        end = self.clock.now() + budget
        while self.clock.now() < end:
            alive = [pid for pid in pids if _alive(pid)]
            if not alive:
                self.decide("checkpoint-signal", f"{pattern!r} exited")
                return
            self.clock.sleep(min(1.0, max(0.0, end - self.clock.now())))
        self.decide("checkpoint-signal", f"{pattern!r} still running after {budget:.0f} s; syncing anyway")

    @property
    def checkpoint_dir(self) -> str:
        return os.path.join(self.s["mount_point"], "checkpoints")

    def sync_argv(self) -> list[str] | None:
        uri = self.s["checkpoint_uri"]
        template = self.s["sync_command"]
        if not uri or not template:
            return None
        values = {"src": self.checkpoint_dir, "dst": uri, "region": self.s["region"], "role": ""}
        if any("{role}" in part for part in template):
            values["role"] = self.instance_role() or ""
        return [part.format(**values) for part in template]

    def instance_role(self) -> str | None:
        """The RAM role attached to an Alibaba Cloud instance (ossutil needs its name)."""
        if self.role is None:
            try:
                status, body = self.metadata.get("/latest/meta-data/ram/security-credentials/")
                if status == 200 and body.strip():
                    self.role = body.strip().splitlines()[0].strip("/")
            except MetadataError as exc:
                self.decide("metadata-error", f"instance role unknown: {exc}")
        return self.role

    def start_periodic_sync(self) -> None:
        if self.sync_proc is not None:
            self.decide("sync", "the previous periodic sync is still running; skipping this one")
            return
        argv = self.sync_argv()
        if argv is None:
            return
        if not os.path.isdir(self.checkpoint_dir):
            self.decide("sync", f"{self.checkpoint_dir} does not exist yet; nothing to sync")
            return
        self.sync_output = tempfile.TemporaryFile()  # noqa: SIM115 - outlives this call; closed in _reap_sync
        try:
            self.sync_proc = subprocess.Popen(argv, stdout=self.sync_output, stderr=subprocess.STDOUT)
        except OSError as exc:
            self.decide("sync", f"periodic sync could not start: {exc}")
            self.sync_output.close()
            self.sync_proc = self.sync_output = None
            return
        self.decide("sync", f"periodic sync started ({self.s['checkpoint_interval_minutes']} min interval)")

    def _reap_sync(self, stop: bool = False) -> None:
        proc = self.sync_proc
        if proc is None:
            return
        if stop and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            self.decide("sync", "periodic sync stopped to make way for the final sync")
        elif proc.poll() is None:
            return
        else:
            self.sync_output.seek(0)
            tail = self.sync_output.read().decode("utf-8", "replace").strip()[-300:]
            self.decide("sync", f"periodic sync exited {proc.returncode}" + (f": {tail}" if tail else ""))
        self.sync_output.close()
        self.sync_proc = self.sync_output = None

    def final_sync(self, window_end: float | None) -> bool:
        self._reap_sync(stop=True)
        argv = self.sync_argv()
        if argv is None:
            self.decide("final-sync", "no checkpoint URI; nothing to sync")
            return False
        if not os.path.isdir(self.checkpoint_dir):
            self.decide("final-sync", f"{self.checkpoint_dir} does not exist; nothing to sync")
            return False
        budget = 1800.0
        if window_end is not None:
            budget = max(5.0, window_end - self.clock.now() - SHUTDOWN_RESERVE_SECONDS)
        return self.run_command("final-sync", argv, budget, "final")

    def shutdown(self, reason: str) -> None:
        self.shutdown_at = self.clock.now()
        self.decide("shutdown", reason)
        ok = self.run_command("shutdown-command", list(self.s["shutdown_command"]), 60, reason)
        if ok and self.s["exit_after_shutdown"]:
            self.done = True

    def stop(self) -> None:
        """SIGTERM (a shutdown from elsewhere, a restart): one last sync of what is there."""
        if self.shutdown_at is None and self.s["checkpoint_uri"]:
            self.decide("stopping", "the service is being stopped -> final sync")
            self.final_sync(self.clock.now() + 60)
        self.done = True


# --- helpers -------------------------------------------------------------------------------------------------


def _time_or(text: str, default: float) -> float:
    try:
        return parse_time(text)
    except ValueError:
        return default


def _processes(proc_root: str) -> list[tuple[int, str]]:
    out = []
    try:
        names = os.listdir(proc_root)
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc_root, name, "cmdline"), "rb") as fh:
                raw = fh.read()
        except OSError:
            continue
        if raw:
            out.append((int(name), raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()))
    return out


def _cmdlines(proc_root: str) -> list[str]:
    return [cmd for _, cmd in _processes(proc_root)]


def _alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)  # reaps a child of ours (tests); others raise ChildProcessError
        if waited == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _ClockFormatter(logging.Formatter):
    def __init__(self, clock: Clock):
        super().__init__("%(asctime)s %(message)s")
        self.clock = clock

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802 - logging API
        return stamp(self.clock.now())


class _LogFile(logging.Handler):
    """Appends to ``<mount>/logs/watchdog.log`` once the data disk is mounted, to /var/log before that."""

    def __init__(self, paths: list[str]):
        super().__init__()
        self.paths = paths

    def emit(self, record: logging.LogRecord) -> None:
        line = self.format(record) + "\n"
        for path in self.paths:
            if os.path.isdir(os.path.dirname(path)):
                try:
                    with open(path, "a", encoding="utf-8") as fh:
                        fh.write(line)
                    return
                except OSError:
                    continue


def configure_logging(settings: dict[str, Any], clock: Clock) -> None:
    merged = {**DEFAULTS, **settings}
    paths = [merged["log_file"]] if merged["log_file"] else [
        os.path.join(merged["mount_point"], "logs", "watchdog.log"),
        "/var/log/gpulease-watchdog.log",
    ]
    formatter = _ClockFormatter(clock)
    log.handlers.clear()
    for handler in (logging.StreamHandler(sys.stdout), _LogFile(paths)):
        handler.setFormatter(formatter)
        log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def load_settings(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        settings = json.load(fh)
    if not isinstance(settings, dict) or "deadline" not in settings:
        raise ValueError(f"{path}: expected a JSON object with at least 'deadline'")
    parse_time(settings["deadline"])
    return settings


def main(argv: list[str] | None = None) -> int:
    path = os.environ.get("GPULEASE_SETTINGS", SETTINGS_PATH)
    clock = Clock.from_env(dict(os.environ))
    try:
        settings = load_settings(path)
    except (OSError, ValueError) as exc:
        print(f"gpulease-watchdog: cannot read settings: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings, clock)
    dog = Watchdog(settings, clock)

    def on_term(signum: int, frame: Any) -> None:
        dog.stop()
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_term)
    dog.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
