#!/usr/bin/env python3
"""gpulease-job-agent: runs the jobs a CI runner leaves in the checkpoint bucket (standard library only).

Installed only on CI stacks (the spec's ``ciRun``), as a systemd service after the bootstrap. It reads
``/etc/gpulease/settings.json`` (``GPULEASE_SETTINGS`` points elsewhere) and talks to the bucket through the
same cloud CLI as the watchdog (``aws s3`` / ``ossutil``) with the instance role. Under
``P = <checkpoint_uri>_gpulease/jobs/<job>/`` (the runner's side is ``gpulease/ephemeral/channel.py``):

1. ``P/request.json`` (``jobId``, ``command``, ``deadline``, ``requestedAt``) is run ONCE as
   ``bash -lc <command>`` in the data directory, as the login user, in a process group of its own, with a clean
   environment holding ``GPULEASE_JOB_ID`` and ``GPULEASE_ARTIFACTS_DIR`` (``<mount>/artifacts/<job>``);
2. its stdout and stderr go to ``<mount>/logs/jobs/<job>.log`` and, every ``log_chunk_seconds``, the complete
   lines written since the last chunk go to ``P/log/<8-digit seq>.txt``;
3. twice ``kill_grace_seconds`` before the deadline (the request's, or the instance's own less the watchdog's
   final-sync window, whichever comes first) its process group gets SIGTERM, and SIGKILL ``kill_grace_seconds``
   later, which leaves as long again for the report to arrive before the runner stops waiting;
4. when it ends: the last log chunk, then the agent's note if it has one (why the job was stopped or not run) as
   a ``[gpulease] ...`` line of its own, the artifacts directory to ``P/artifacts/``, then ``P/result.json``
   (``exitCode``, ``finishedAt``, and ``note`` / ``artifactsError`` when set) LAST.

Once only: the job's local state (``<state_dir>/<job>.json``) is written before the process starts, so a
restarted agent never starts it again; it finishes the report instead (exit code 125 when the process was
lost). The instance's deadline is read as the watchdog reads it (``cloud_access.InstanceDeadline``, then the
watchdog's saved state). A job whose ``result.json`` exists, whose deadline has passed, or that was requested
before this instance booted (a retained bucket's leftover) is never run. A failed CLI call is logged and retried at the
next poll; the result is written only after everything before it has arrived. Every decision is a line on
stdout, i.e. in the journal (``journalctl -u gpulease-job-agent``). Nothing is logged from the request but its
job id: a command may carry tokens.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

try:
    from instance import bounds, manifest
    from instance import cloud_access as ca
except ImportError:  # on the instance: cloud_access.py is installed next to this file
    import bounds  # type: ignore[no-redef]
    import cloud_access as ca  # type: ignore[no-redef]
    import manifest  # type: ignore[no-redef]

UTC = timezone.utc  # noqa: UP017 - the instance may run Python 3.10 (Ubuntu 22.04), before datetime.UTC

DEFAULTS: dict[str, Any] = {
    "cloud": "aws",
    "region": "",
    "deadline_tag": "gpulease:expires-at",
    "max_runtime_hours": 8,
    "final_sync_minutes": 5,
    "mount_point": "/data",
    "data_owner": "ubuntu",
    "metadata_url": None,
    "metadata_timeout_seconds": 3,
    "clock_skew_seconds": 300,
    "artifact_attempts": 5,
    "cli_timeout_seconds": 600,
    "state_dir": "/var/lib/gpulease/jobs",
    "watchdog_state_dir": "/var/lib/gpulease",
    "boot_time": None,
    "deadline_api": False,
    "ecs_endpoint": None,
}
# The exit code of a job that could not run or whose process was lost (as env and docker run use it).
NOT_RUN = 125
JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
# A line longer than this is shipped before its end (a progress bar that never prints a newline).
MAX_PARTIAL = 65536


def say(message: str) -> None:
    print(f"{stamp(time.time())} {message}", flush=True)


def parse_time(value: str) -> float:
    moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_listing(text: str, uri: str) -> list[str]:
    """Names one level below ``uri`` in ``aws s3 ls`` or ``ossutil ls -d`` output; sub-prefixes end with "/"."""
    names = []
    for line in text.splitlines():
        line = line.strip()
        parts = line.split(None, 3)
        if line.startswith(uri) and line != uri:
            names.append(line[len(uri) :])
        elif line.startswith("PRE "):
            names.append(line[4:])
        elif len(parts) == 4 and re.match(r"\d{4}-\d\d-\d\d\Z", parts[0]):
            names.append(parts[3])
    return names


def exit_code(returncode: int) -> int:
    """A death by signal as a shell reports it (SIGKILL: 137)."""
    return 128 - returncode if returncode < 0 else returncode


def kill_group(pgid: int, signum: int) -> bool:
    try:
        os.killpg(pgid, signum)
        return True
    except OSError:
        return False


def read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip()
    except OSError:
        return ""


PHASES = ("started", "exited", "done")
RECORD_FIELDS: dict[str, tuple[type, ...]] = {
    "bootId": (str,), "pid": (int,), "offset": (int,), "seq": (int,), "exitCode": (int,), "finishedAt": (str,),
    "note": (str,), "killed": (str,), "artifactsError": (str,), "failures": (int,), "noted": (bool,), "sent": (bool,),
}
"""The fields of a job's local state record and their types (what ``Agent.save`` writes)."""
NEEDED = {"started": ("offset", "seq"), "exited": ("offset", "seq", "exitCode", "finishedAt"), "done": ()}


def load_record(path: str) -> tuple[dict[str, Any] | None, str]:
    """A job's state record through the strict reader (``cloud_access.load_settings``: a regular file, the size cap,
    strict UTF-8, one JSON object, no duplicate keys) with each field of its type: the record, or None and why not."""
    try:
        st = ca.load_settings(path)
    except ca.SettingsError as exc:
        return None, str(exc)
    if st.get("phase") not in PHASES:
        return None, f"{path}: phase {st.get('phase')!r} is not one of {', '.join(PHASES)}"
    for key in NEEDED[st["phase"]]:
        if key not in st:
            return None, f"{path}: {'an' if st['phase'] == 'exited' else 'a'} {st['phase']} record without {key}"
    for key, kinds in RECORD_FIELDS.items():
        value = st.get(key)
        if key in st and (not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool))
                          or (isinstance(value, int) and not isinstance(value, bool) and not 0 <= value < 2**62)):
            return None, f"{path}: {key} is {value!r}; accepted: {' or '.join(k.__name__ for k in kinds)}" + (
                ", 0 or more" if int in kinds else "")
    return st, ""


class Agent:
    def __init__(
        self, settings: dict[str, Any], now: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep
    ):
        self.s = s = {**DEFAULTS, **settings, **(settings.get("job_agent") or {})}
        self.now, self.sleep = now, sleep
        self.jobs = f"{s['checkpoint_uri']}_gpulease/jobs/"
        self.boot_id = read("/proc/sys/kernel/random/boot_id")
        btime = re.search(r"^btime (\d+)", read("/proc/stat"), re.M)
        self.boot = s["boot_time"] if s["boot_time"] is not None else btime and float(btime.group(1))
        self.metadata = ca.Metadata(s["cloud"], s["metadata_url"], float(s["metadata_timeout_seconds"]))
        self.credentials = ca.RoleCredentials(self.metadata)
        # The watchdog's source, read once per job admitted (no interval: admissions are rare).
        self.deadline_reader = ca.InstanceDeadline(
            self.metadata, self.credentials, tag=s["deadline_tag"], region=s["region"],
            api=bool(s["deadline_api"]) and s["cloud"] == "alicloud", endpoint=s["ecs_endpoint"], api_interval=0.0,
        )
        self.running: dict[str, Any] | None = None
        self.done = False

    # -- the bucket, through the cloud CLI: a failure is logged and the caller retries at the next poll --

    def cli(self, what: str, template: str, src: str = "", dst: str = "") -> str | None:
        try:
            call = ca.storage_command(list(self.s[template]), {"src": src, "dst": dst}, cloud=self.s["cloud"],
                                      region=self.s["region"], metadata=self.metadata, credentials=self.credentials)
        except (ca.CredentialsError, OSError) as exc:
            say(f"bucket: {what}: no credentials: {exc}")
            return None
        try:
            code, out, err = ca.run_bounded_split(call.argv, float(self.s["cli_timeout_seconds"]), env=call.env)
        finally:
            call.close()
        if code is None:
            say(f"bucket: {what}: no answer within {self.s['cli_timeout_seconds']} s; killed")
            return None
        if code == 0 or (template == "list_command" and code == 1 and not err.strip()):
            return out  # aws s3 ls exits 1 when nothing is under the prefix
        say(f"bucket: {what}: exit {code}: {' '.join(err.split())[-300:]}")
        return None

    def listing(self, uri: str) -> list[str] | None:
        out = self.cli(f"list {uri}", "list_command", dst=uri)
        return None if out is None else parse_listing(out, uri)

    def put(self, what: str, data: bytes, dst: str) -> bool:
        with tempfile.NamedTemporaryFile() as fh:
            fh.write(data)
            fh.flush()
            return self.cli(what, "copy_command", fh.name, dst) is not None

    def instance_deadline(self) -> float:
        """The instance's deadline as the watchdog sees it: its tag (metadata, then on Alibaba Cloud the ECS API),
        else the last value the watchdog read, else first boot (the watchdog's record of it) + max runtime."""
        try:
            value, _ = self.deadline_reader.read()
            return value
        except ca.DeadlineUnreadError as exc:
            unread = str(exc)
        saved = ca.saved_state(self.s["watchdog_state_dir"])
        if isinstance(saved.get("deadline"), (int, float)):
            say(f"deadline tag unread ({unread}); using the last value the watchdog read")
            return float(saved["deadline"])
        first = saved.get("first_boot") if isinstance(saved.get("first_boot"), (int, float)) else self.boot
        say(f"deadline tag unread ({unread}); using first boot + max_runtime_hours")
        return float(first or self.now()) + 3600 * float(self.s["max_runtime_hours"])

    # -- local state, written before the process starts: nothing ever runs twice --

    def path(self, job: str, kind: str = "state") -> str:
        mount = self.s["mount_point"]
        return {
            "state": f"{self.s['state_dir']}/{job}.json",
            "log": f"{mount}/logs/jobs/{job}.log",
            "artifacts": f"{mount}/artifacts/{job}",
        }[kind]

    def save(self, job: str, st: dict[str, Any]) -> None:
        os.makedirs(self.s["state_dir"], exist_ok=True)
        tmp = self.path(job) + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(st, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path(job))

    # -- the loop --

    def run(self, max_ticks: int | None = None) -> None:
        say(f"start: jobs from {self.jobs}")
        ticks = 0
        while not self.done and (max_ticks is None or ticks < max_ticks):
            try:
                self.tick()
            except Exception as exc:  # one bad tick must never end the agent
                say(f"tick failed: {exc!r}")
            ticks += 1
            if not self.done:
                self.sleep(float(self.s["log_chunk_seconds" if self.running else "poll_seconds"]))

    def tick(self) -> None:
        if self.running:
            return self.watch()
        try:
            names = sorted(os.listdir(self.s["state_dir"]))
        except OSError:
            names = []
        for name in [n for n in names if n.endswith(".json")]:
            job, (st, why) = name[:-5], load_record(f"{self.s['state_dir']}/{name}")
            if st is None:
                # Never run again (its record exists) nor reported from values it does not hold; the other jobs
                # go on.
                say(f"job state {name}: not a job record ({why}); left alone")
                continue
            if st["phase"] == "started":
                self.lost(job, st)
            if st["phase"] == "exited":
                self.finish(job, st)
        for name in self.listing(self.jobs) or []:
            job = name.rstrip("/")
            if name.endswith("/") and JOB_ID.fullmatch(job) and not os.path.exists(self.path(job)):
                self.consider(job)
                if self.running:
                    return

    # -- a new job --

    def consider(self, job: str) -> None:
        prefix = f"{self.jobs}{job}/"
        names = self.listing(prefix) or []
        if "result.json" in names:
            say(f"job {job}: has a result.json, skipped")
            return self.save(job, {"phase": "done"})
        if "request.json" not in names:
            return
        local = self.path(job) + ".request"
        os.makedirs(self.s["state_dir"], exist_ok=True)
        if self.cli(f"get {job} request", "copy_command", prefix + "request.json", local) is None:
            return
        try:
            request = ca.load_settings(local)
        except ca.SettingsError as exc:
            request = {"error": f"request.json is not a JSON object ({str(exc).removeprefix(local + ':').strip()})"}
        os.remove(local)
        self.admit(job, request)

    def admit(self, job: str, request: dict[str, Any]) -> None:
        try:
            asked = parse_time(str(request.get("requestedAt")))
        except ValueError:
            asked = None
        if asked and self.boot and asked < self.boot - self.s["clock_skew_seconds"]:
            # A retained bucket's leftover: the runner asks only after this instance reported ready.
            say(f"job {job}: requested at {stamp(asked)}, before this instance booted, ignored")
            return self.save(job, {"phase": "done"})
        command, problem = request.get("command"), request.get("error")
        try:
            stop_at = parse_time(str(request.get("deadline")))
        except ValueError:
            stop_at, problem = 0.0, problem or "deadline is not an RFC 3339 time"
        if not isinstance(command, str) or not command.strip():
            problem = problem or "the request has no command"
        if request.get("jobId") != job:
            problem = problem or "jobId is not the job's directory"
        # Done before the watchdog's final sync and shutdown, which would cut the report short.
        stop_at = min(stop_at, self.instance_deadline() - 60 * self.s["final_sync_minutes"])
        stop_at -= 2 * self.s["kill_grace_seconds"]  # killed, and reported, by the deadline rather than after it
        if self.now() >= stop_at:
            problem = problem or f"too late (stop at {stamp(stop_at)})"
        if problem:
            return self.exited(job, {"offset": 0, "seq": 1}, NOT_RUN, f"not run: {problem}")
        self.start(job, command, stop_at)

    def start(self, job: str, command: str, stop_at: float) -> None:
        artifacts, log_path = self.path(job, "artifacts"), self.path(job, "log")
        os.makedirs(os.path.dirname(log_path), exist_ok=True)
        os.makedirs(artifacts, exist_ok=True)
        root, user, ids = os.geteuid() == 0, pwd.getpwuid(os.geteuid()), {}
        if root:
            # As the login user, who owns the data directories (the agent runs as root), and never as root: a
            # login user that is not an account here (a typo, a name the image lacks) means the job is not run.
            owner = self.s["data_owner"]
            try:
                user = pwd.getpwnam(owner) if isinstance(owner, str) and owner else None
            except KeyError:
                user = None
            if user is None or user.pw_uid == 0:
                why = "is not an account on this instance" if user is None else "is root"
                say(f"job {job}: refused: the login user {owner!r} {why}; jobs never run as root")
                return self.exited(job, {"offset": 0, "seq": 1}, NOT_RUN,
                                   f"not run: the login user {owner!r} {why}; jobs never run as root")
            ids = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": os.getgrouplist(user.pw_name, user.pw_gid)}
            os.chown(artifacts, user.pw_uid, user.pw_gid)
        env = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "HOME": user.pw_dir,
            "USER": user.pw_name,
            "LOGNAME": user.pw_name,
            "PYTHONUNBUFFERED": "1",  # print() reaches the log as it happens, not at exit
            "GPULEASE_JOB_ID": job,
            "GPULEASE_ARTIFACTS_DIR": artifacts,
        }
        st: dict[str, Any] = {"phase": "started", "bootId": self.boot_id, "offset": 0, "seq": 1}
        self.save(job, st)
        # The run manifest (what ran, on what), to the control area; never keeps the job from starting.
        manifest.write(self.s, command=command, cwd=self.s["mount_point"], job=job, say=say)
        try:
            with open(log_path, "ab") as out:
                proc = subprocess.Popen(
                    ["bash", "-lc", command], cwd=self.s["mount_point"], env=env, stdin=subprocess.DEVNULL,
                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **ids,
                )
        except OSError as exc:
            return self.exited(job, st, NOT_RUN, f"could not start: {exc}")
        st["pid"] = proc.pid
        self.save(job, st)
        self.running = {"job": job, "st": st, "proc": proc, "stop_at": stop_at, "term_at": None}
        say(f"job {job}: started as {user.pw_name}, pid {proc.pid}, stop at {stamp(stop_at)}")

    # -- a running job --

    def watch(self) -> None:
        r = self.running
        job, st, proc = r["job"], r["st"], r["proc"]
        code = proc.poll()
        if code is None:
            if r["term_at"] is None and self.now() >= r["stop_at"]:
                r["term_at"] = self.now()
                st["killed"] = f"stopped at its deadline (SIGTERM, SIGKILL {self.s['kill_grace_seconds']} s later)"
                kill_group(proc.pid, signal.SIGTERM)
            elif r["term_at"] is not None and self.now() >= r["term_at"] + self.s["kill_grace_seconds"]:
                kill_group(proc.pid, signal.SIGKILL)
            self.ship_log(job, st, final=False)
            return
        kill_group(proc.pid, signal.SIGKILL)  # what it left running in its group ends with it
        self.running = None
        self.exited(job, st, exit_code(code), st.get("killed"))

    def exited(self, job: str, st: dict[str, Any], code: int, note: str | None) -> None:
        st.update(phase="exited", exitCode=code, finishedAt=stamp(self.now()))
        if note:
            st["note"] = note
        say(f"job {job}: exit code {code}" + (f" ({note})" if note else ""))
        self.save(job, st)
        self.finish(job, st)

    def lost(self, job: str, st: dict[str, Any]) -> None:
        """Started by an earlier run of the agent: stop what is left of it and report it, never run it again."""
        if st.get("pid") and st.get("bootId") == self.boot_id and kill_group(st["pid"], signal.SIGKILL):
            say(f"job {job}: killed its leftover process group")
        st.update(phase="exited", exitCode=NOT_RUN, finishedAt=stamp(self.now()))
        st["note"] = "lost: the job agent restarted while it ran"
        self.save(job, st)

    def ship_log(self, job: str, st: dict[str, Any], final: bool) -> bool:
        """Upload what the job wrote since the last chunk: complete lines only, unless ``final``."""
        try:
            with open(self.path(job, "log"), "rb") as fh:
                fh.seek(st["offset"])
                data = fh.read()
        except OSError:
            data = b""
        if not final and len(data) <= MAX_PARTIAL:
            data = data[: max(data.rfind(b"\n"), data.rfind(b"\r")) + 1]
        return not data or self.chunk(job, st, data, offset=st["offset"] + len(data))

    def chunk(self, job: str, st: dict[str, Any], data: bytes, **done: Any) -> bool:
        """One numbered log object; what it accounts for is saved with the new number, together."""
        if not self.put(f"log chunk {st['seq']} of {job}", data, f"{self.jobs}{job}/log/{st['seq']:08d}.txt"):
            return False
        st.update(done, seq=st["seq"] + 1)
        self.save(job, st)
        return True

    # -- the report, in the order the runner relies on: log, note, artifacts, then the result --

    def finish(self, job: str, st: dict[str, Any]) -> bool:
        if not self.ship_log(job, st, final=True):
            return False
        note = st.get("note") and not st.get("noted") and f"[gpulease] {st['note']}\n".encode()
        if note and not self.chunk(job, st, note, noted=True):
            return False
        artifacts = self.path(job, "artifacts")
        if not st.get("sent") and os.path.isdir(artifacts) and os.listdir(artifacts):
            if self.cli(f"artifacts of {job}", "copy_dir_command", artifacts, f"{self.jobs}{job}/artifacts/") is None:
                st["failures"] = st.get("failures", 0) + 1
                self.save(job, st)
                if st["failures"] < self.s["artifact_attempts"]:
                    return False
                st["artifactsError"] = "the artifacts upload failed"
            st["sent"] = True
        result = {"exitCode": st["exitCode"], "finishedAt": st["finishedAt"]}
        result.update({k: st[k] for k in ("note", "artifactsError") if k in st})
        if not self.put(f"result of {job}", json.dumps(result).encode(), f"{self.jobs}{job}/result.json"):
            self.save(job, st)
            return False
        st["phase"] = "done"
        self.save(job, st)
        say(f"job {job}: reported")
        return True

    def stop(self) -> None:
        """SIGTERM (a shutdown, a restart): stop the job and report what there is."""
        r, self.done = self.running, True
        if r:
            r["st"]["killed"] = "stopped: the job agent is stopping"
            kill_group(r["proc"].pid, signal.SIGTERM)
            try:
                r["proc"].wait(timeout=min(bounds.value("job_stop_wait"), self.s["kill_grace_seconds"]))
            except subprocess.TimeoutExpired:
                kill_group(r["proc"].pid, signal.SIGKILL)
                r["proc"].wait()
            self.watch()


def main() -> int:
    path = os.environ.get("GPULEASE_SETTINGS", "/etc/gpulease/settings.json")
    try:
        settings = ca.load_settings(path)
        if not settings.get("checkpoint_uri") or not isinstance(settings.get("job_agent"), dict):
            raise ca.SettingsError(f"{path}: no checkpoint_uri or job_agent")
    except ca.SettingsError as exc:
        print(f"gpulease-job-agent: cannot read settings: {exc}", file=sys.stderr)
        return 2
    agent = Agent(settings)

    def on_term(signum: int, frame: Any) -> None:
        agent.stop()
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_term)
    agent.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
