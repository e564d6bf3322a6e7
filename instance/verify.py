#!/usr/bin/env python3
"""gpulease-verify: a short run before the long one (standard library only, Python 3.10).

Run by ``run_job.py`` after readiness when the spec declares ``verify``. Within ``max_minutes`` in all:

1. ``command`` runs with ``bash -lc`` as the login user in the data directory (never as root), in a process group
   of its own, its output in ``<mount>/logs/verify-run.log`` (a file, never a pipe); meanwhile nvidia-smi is
   sampled for utilisation and memory on every GPU;
2. with ``resume_command``: as soon as the first run has written its first checkpoint, its whole process group
   is killed (SIGKILL, as a crash or a reclaim would), then ``resume_command`` runs the same way
   (``verify-resume.log``) until it reports the step it resumed at; it is then killed too.

What the job tells the verification (documented in docs/run.md):

- its environment holds ``GPULEASE_VERIFY=1``, ``GPULEASE_VERIFY_STEPS`` (the spec's ``steps``, when given),
  ``GPULEASE_CHECKPOINT_DIR`` (``<mount>/checkpoints``) and ``GPULEASE_RESUME_STEP_FILE``
  (``<mount>/logs/resume-step``);
- ``GPULEASE_CHECKPOINT_STEP=<n>`` on a line of its output after it saved a checkpoint at step n (optional:
  without it, the first new file under the checkpoint directory counts, once its size stops changing);
- ``GPULEASE_RESUMED_STEP=<n>`` on a line of the resumed run's output, or n written to
  ``$GPULEASE_RESUME_STEP_FILE``: the step it resumed from (0 means it started over).

The checks (each ``ok`` true, false, or null when not asked for): ``run`` (the first run exited 0, or was stopped
at its first checkpoint on purpose), ``gpu`` (the GPU was used: utilisation above 0 or memory above the baseline),
``memory`` (the peak leaves ``min_free_gpu_memory_percent`` free), ``checkpoint`` (a checkpoint was written),
``resume`` (the resumed step is at least the checkpoint's, and above 0). The result, ``verify.json``, also carries
the peak memory against the capacity, the seconds of each run and the step resumed; ``run_job.py`` writes it and
copies it to ``<control_uri>verify.json``. ``GPULEASE_CLOCK_SPEED`` shortens the bound for tests.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import signal
import subprocess
import sys
import time
from typing import Any

try:
    from instance import bounds, control, gpu_query, process_tree
    from instance import cloud_access as ca
except ImportError:  # on the instance: the other tools are installed next to this file
    import bounds  # type: ignore[no-redef]
    import cloud_access as ca  # type: ignore[no-redef]
    import control  # type: ignore[no-redef]
    import gpu_query  # type: ignore[no-redef]
    import process_tree  # type: ignore[no-redef]

DEFAULTS: dict[str, Any] = {
    "cloud": "aws",
    "mount_point": "/data",
    "data_owner": "ubuntu",
    "state_dir": "/var/lib/gpulease",
    "nvidia_smi": "nvidia-smi",
    "verify_poll_seconds": 2.0,
}
# A step is 1 to 18 ASCII digits on a line of its own (after any prefix the job prints): longer numbers and other
# digits (``²``, Arabic-Indic) are not steps. Only complete lines are read (a line split across two reads waits).
CHECKPOINT_LINE = re.compile(rb"GPULEASE_CHECKPOINT_STEP=([0-9]+)[ \t\r]*$", re.M)
RESUMED_LINE = re.compile(rb"GPULEASE_RESUMED_STEP=([0-9]+)[ \t\r]*$", re.M)
STEP_DIGITS = 18
GPU_QUERY = gpu_query.QUERY


def say(message: str) -> None:
    print(f"{control.now_stamp()} verify: {message}", flush=True)


class RunAsError(Exception):
    """The login user cannot run the job (not an account here, or root)."""


def login_user(owner: str) -> tuple[dict[str, Any], pwd.struct_passwd]:
    """Popen options that drop to the login user when running as root (as the services do), and that user; the
    current user otherwise (a test)."""
    if os.geteuid() != 0:
        return {}, pwd.getpwuid(os.geteuid())
    try:
        user = pwd.getpwnam(owner)
    except KeyError:
        raise RunAsError(f"the login user {owner!r} is not an account on this instance") from None
    if user.pw_uid == 0:
        raise RunAsError(f"the login user {owner!r} is root; jobs never run as root")
    ids = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": os.getgrouplist(user.pw_name, user.pw_gid)}
    return ids, user


def job_environment(user: pwd.struct_passwd, extra: dict[str, str]) -> dict[str, str]:
    """A clean environment: nothing of the service's own (no credentials, no settings path) reaches the job."""
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "HOME": user.pw_dir,
        "USER": user.pw_name,
        "LOGNAME": user.pw_name,
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


class GpuSampler:
    """Peak utilisation and memory over nvidia-smi samples, per GPU; the first sample is the baseline."""

    def __init__(self, nvidia_smi: str):
        self.nvidia_smi = nvidia_smi
        self.samples = 0
        self.peak_util = 0.0
        self.peak_memory = 0.0
        self.total_memory: float | None = None
        self.baseline: float | None = None
        self.error: str | None = None

    def sample(self) -> None:
        code, out = ca.run_bounded([self.nvidia_smi, *GPU_QUERY], bounds.value("gpu_query_verify"))
        if code != 0:
            self.error = f"nvidia-smi {'did not answer' if code is None else f'exited {code}'}: {out[-200:]}"
            return
        gpus = gpu_query.parse(out)
        if not gpus:
            self.error = gpu_query.problem(out, gpus)
            return
        self.samples += 1
        used = max(g.memory_used or 0.0 for g in gpus)
        if self.baseline is None:
            self.baseline = used
        self.peak_util = max(self.peak_util, *(g.utilization or 0.0 for g in gpus))
        self.peak_memory = max(self.peak_memory, used)
        totals = [g.memory_total for g in gpus if g.memory_total]
        self.total_memory = min(totals) if totals else self.total_memory

    def summary(self) -> dict[str, Any]:
        total = self.total_memory
        return {
            "samples": self.samples,
            "peakUtilizationPercent": self.peak_util,
            "peakMemoryMib": self.peak_memory,
            "baselineMemoryMib": self.baseline,
            "memoryTotalMib": total,
            "peakMemoryPercent": round(100 * self.peak_memory / total, 1) if total else None,
            "error": self.error if not self.samples else None,
        }


def _files(root: str) -> dict[str, tuple[int, float]]:
    found: dict[str, tuple[int, float]] = {}
    for folder, _, names in os.walk(root):
        for name in names:
            if name.startswith("."):
                continue
            path = os.path.join(folder, name)
            with contextlib.suppress(OSError):
                info = os.stat(path)
                found[os.path.relpath(path, root)] = (info.st_size, info.st_mtime)
    return found


class Run:
    """One command in its own process group, its output appended to a log file that is read as it grows."""

    def __init__(self, command: str, cwd: str, log_path: str, env: dict[str, str], ids: dict[str, Any]):
        self.log_path = log_path
        self.offset = 0
        self.started = time.monotonic()
        self.ended: float | None = None
        # Everything the command starts carries the token, and orphans come back to this process: ending the run
        # ends a daemon that left the group with setsid too (process_tree).
        self.token = process_tree.new_token()
        process_tree.become_subreaper()
        with open(log_path, "ab") as out:
            self.offset = out.tell()
            self.proc = subprocess.Popen(
                ["bash", "-lc", command], cwd=cwd, env={**env, process_tree.TOKEN_VARIABLE: self.token},
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **ids,
            )

    def poll(self) -> int | None:
        code = self.proc.poll()
        if code is not None and self.ended is None:
            self.ended = time.monotonic()
            self.end_all()  # what it left running (in its group, its session, or detached with setsid) ends with it
        return code

    def end_all(self) -> None:
        left = process_tree.end_all(self.proc.pid, self.token)
        if left:
            say(f"processes {sorted(left)} of {self.log_path} could not be ended")

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.poll()
        self.end_all()

    def output(self) -> bytes:
        """The complete lines it wrote since the last call (a line still being written waits for the next)."""
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read(16 * 1024 * 1024)
        except OSError:
            return b""
        end = data.rfind(b"\n") + 1
        if end == 0 and self.ended is not None:
            end = len(data)  # the run is over: its last line is complete
        self.offset += end
        return data[:end]

    @property
    def seconds(self) -> float:
        return round((self.ended or time.monotonic()) - self.started, 1)


class StepError(ValueError):
    """A step the job reported that is not a step number (too long, not ASCII digits)."""


def _step(digits: bytes | str) -> int:
    text = digits.decode("ascii", "replace") if isinstance(digits, bytes) else digits
    if not re.fullmatch(rf"[0-9]{{1,{STEP_DIGITS}}}", text):
        shown = text if len(text) <= 24 else f"{text[:20]}... ({len(text)} characters)"
        raise StepError(f"{shown!r} is not a step number (1 to {STEP_DIGITS} digits 0-9)")
    return int(text)


def _last(pattern: re.Pattern[bytes], data: bytes) -> int | None:
    found = pattern.findall(data)
    return _step(found[-1]) if found else None


def _reported_step(path: str) -> int | None:
    """The step in the resume-step file: None while it is absent or empty, ``StepError`` when it is not a step."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(256)
    except OSError:
        return None
    text = raw.decode("utf-8", "replace").strip()
    return _step(text) if text else None


def verify(settings: dict[str, Any], speed: float | None = None) -> dict[str, Any]:
    """Run the verification the settings declare; the verify.json document, whatever happens (a failure that is
    not one of the checks is the ``verify`` check, saying why)."""
    try:
        return _verify(settings, speed)
    except Exception as exc:  # every failure ends in a verify.json saying why, never in a traceback alone
        result: dict[str, Any] = {"maxMinutes": None, "checkpointStep": None, "stepResumed": None, "seconds": {}}
        checks = {"verify": {"ok": False, "detail": f"the verification itself failed: {type(exc).__name__}: "
                             f"{str(exc)[:300]}"}}
        return _finish(result, checks, GpuSampler(str(settings.get("nvidia_smi") or "nvidia-smi")))


def _verify(settings: dict[str, Any], speed: float | None = None) -> dict[str, Any]:
    s = {**DEFAULTS, **settings}
    spec = s["verify"]
    speed = speed or float(os.environ.get("GPULEASE_CLOCK_SPEED") or 1.0)
    mount = s["mount_point"]
    logs, checkpoints = os.path.join(mount, "logs"), os.path.join(mount, "checkpoints")
    resume_file = os.path.join(logs, "resume-step")
    max_minutes = float(spec["max_minutes"])
    end = time.monotonic() + max_minutes * 60 / speed
    poll = float(s["verify_poll_seconds"])
    resume_command = spec.get("resume_command")
    checks: dict[str, dict[str, Any]] = {}
    result: dict[str, Any] = {"maxMinutes": max_minutes, "checkpointStep": None, "stepResumed": None, "seconds": {}}
    extra = {"GPULEASE_VERIFY": "1", "GPULEASE_CHECKPOINT_DIR": checkpoints, "GPULEASE_RESUME_STEP_FILE": resume_file}
    if spec.get("steps"):
        extra["GPULEASE_VERIFY_STEPS"] = str(spec["steps"])
    sampler = GpuSampler(s["nvidia_smi"])
    try:
        ids, user = login_user(s["data_owner"])
    except RunAsError as exc:
        checks["run"] = {"ok": False, "detail": f"not run: {exc}"}
        return _finish(result, checks, sampler)
    env = job_environment(user, extra)
    for path in (logs, checkpoints):
        os.makedirs(path, exist_ok=True)
    with contextlib.suppress(OSError):
        os.remove(resume_file)
    sampler.sample()  # the baseline, before anything of the job holds GPU memory
    before = _files(checkpoints)
    say(f"running the verification ({max_minutes:g} min at most): {'run, resume' if resume_command else 'run'}")
    try:
        first = Run(spec["command"], mount, os.path.join(logs, "verify-run.log"), env, ids)
    except OSError as exc:
        checks["run"] = {"ok": False, "detail": f"could not start: {exc}"}
        return _finish(result, checks, sampler)
    seen: dict[str, tuple[int, float]] | None = None  # new checkpoint files, once, to see their size settle
    stopped_at_checkpoint = timed_out = False
    while True:
        code = first.poll()
        sampler.sample()
        try:
            step = _last(CHECKPOINT_LINE, first.output())
        except StepError as exc:
            first.kill()
            result["seconds"]["run"] = first.seconds
            checks["run"] = {"ok": False, "detail": f"GPULEASE_CHECKPOINT_STEP: {exc}"}
            return _finish(result, checks, sampler)
        if step is not None and result["checkpointStep"] is None:
            result["checkpointStep"] = step
        new = {k: val for k, val in _files(checkpoints).items() if before.get(k) != val}
        written = result["checkpointStep"] is not None or (bool(new) and new == seen)
        seen = new or None
        if code is not None:
            break
        if resume_command and written:
            first.kill()
            stopped_at_checkpoint = True
            break
        if time.monotonic() >= end:
            first.kill()
            timed_out = True
            break
        time.sleep(poll)
    result["seconds"]["run"] = first.seconds
    has_checkpoint = result["checkpointStep"] is not None or bool(seen) or bool(new)
    if stopped_at_checkpoint:
        checks["run"] = {"ok": True, "detail": f"stopped on purpose at its first checkpoint after {first.seconds:g} s"}
    elif timed_out:
        checks["run"] = {"ok": False, "detail": f"did not finish within maxMinutes ({max_minutes:g} min); its "
                         "process group was killed"}
    elif code == 0:
        checks["run"] = {"ok": True, "detail": f"exited 0 after {first.seconds:g} s"}
    else:
        checks["run"] = {"ok": False, "detail": f"exited {code if code >= 0 else 128 - code} after "
                         f"{first.seconds:g} s (see {first.log_path})"}
    if resume_command:
        checks["checkpoint"] = (
            {"ok": True, "detail": "a checkpoint was written" + (
                f" at step {result['checkpointStep']}" if result["checkpointStep"] is not None else
                f" ({', '.join(sorted(new or seen or {})[:3])})")}
            if has_checkpoint else
            {"ok": False, "detail": f"no checkpoint appeared under {checkpoints} and no GPULEASE_CHECKPOINT_STEP line"}
        )
    if resume_command and has_checkpoint and not timed_out:
        checks["resume"], result["stepResumed"] = _resume(resume_command, mount, logs, env, ids, end, poll, sampler,
                                                          resume_file, result)
    elif resume_command:
        checks["resume"] = {"ok": False, "detail": "not tried: there was no checkpoint to resume from"}
    return _finish(result, checks, sampler, spec.get("min_free_gpu_memory_percent"))


def _resume(command: str, mount: str, logs: str, env: dict[str, str], ids: dict[str, Any], end: float, poll: float,
            sampler: GpuSampler, resume_file: str, result: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
    """Run the resume command until it reports the step it resumed at; (the check, that step)."""
    try:
        run = Run(command, mount, os.path.join(logs, "verify-resume.log"), env, ids)
    except OSError as exc:
        return {"ok": False, "detail": f"resumeCommand could not start: {exc}"}, None
    step: int | None = None
    code: int | None = None
    while step is None:
        code = run.poll()
        sampler.sample()
        try:
            step = _last(RESUMED_LINE, run.output())
            if step is None:
                step = _reported_step(resume_file)
        except StepError as exc:
            run.kill()
            result["seconds"]["resume"] = run.seconds
            return {"ok": False, "detail": f"resumeCommand reported the step it resumed at as {exc}"}, None
        if step is not None or code is not None or time.monotonic() >= end:
            break
        time.sleep(poll)
    if run.poll() is None:
        run.kill()
    result["seconds"]["resume"] = run.seconds
    if step is None:
        why = "ran out of time" if code is None else f"exited {code}"
        return {"ok": False, "detail": f"resumeCommand {why} without reporting the step it resumed at (print "
                "GPULEASE_RESUMED_STEP=<n> or write n to $GPULEASE_RESUME_STEP_FILE)"}, None
    saved = result["checkpointStep"]
    if step <= 0:
        return {"ok": False, "detail": "resumeCommand started over (resumed at step 0) instead of from the checkpoint"}, step
    if saved is not None and step != saved:
        return {"ok": False, "detail": f"resumed at step {step}, not at the checkpoint's step {saved} (a resume must "
                "continue from the checkpoint it was given)"}, step
    return {"ok": True, "detail": f"resumed at step {step}" + (f" (checkpoint at step {saved})" if saved is not None
                                                               else "")}, step


def _finish(result: dict[str, Any], checks: dict[str, dict[str, Any]], sampler: GpuSampler,
            min_free: float | None = None) -> dict[str, Any]:
    gpu = sampler.summary()
    if "verify" in checks or ("run" in checks and checks["run"]["detail"].startswith(("not run", "could not start"))):
        checks["gpu"] = {"ok": None, "detail": "the run did not start"}
    elif not sampler.samples:
        checks["gpu"] = {"ok": False, "detail": f"the GPU could not be read: {sampler.error}"}
    else:
        used = gpu["peakUtilizationPercent"] > 0 or gpu["peakMemoryMib"] > (gpu["baselineMemoryMib"] or 0)
        checks["gpu"] = {"ok": used, "detail": (
            f"peak utilisation {gpu['peakUtilizationPercent']:g}%, peak memory {gpu['peakMemoryMib']:g} MiB"
            if used else "the GPU stayed idle (0% utilisation, no memory allocated): the framework did not use it")}
    total = gpu["memoryTotalMib"]
    if min_free is None or not total:
        checks["memory"] = {"ok": None, "detail": f"peak {gpu['peakMemoryMib']:g} of {total or '?'} MiB (no "
                            "minFreeGpuMemoryPercent asked)"}
    else:
        free = 100 - 100 * gpu["peakMemoryMib"] / total
        checks["memory"] = {"ok": free >= min_free, "detail": f"peak {gpu['peakMemoryMib']:g} of {total:g} MiB "
                            f"leaves {free:.1f}% free; at least {min_free:g}% asked"}
    failed = sorted(name for name, check in checks.items() if check["ok"] is False)
    result.update(passed=not failed, failed=failed, checks=checks, gpu=gpu, time=control.now_stamp())
    result["seconds"]["total"] = round(sum(v for k, v in result["seconds"].items() if k != "total"), 1)
    return result


def main() -> int:
    """Run the verification alone (``run_job.py`` runs it before the job): the exit status says whether it passed."""
    path = os.environ.get("GPULEASE_SETTINGS", "/etc/gpulease/settings.json")
    try:
        settings = ca.load_settings(path, required=("verify",))
    except ca.SettingsError as exc:
        print(f"gpulease-verify: cannot read settings: {exc}", file=sys.stderr, flush=True)
        return 2
    result = verify(settings)
    say("PASSED" if result["passed"] else f"FAILED: {', '.join(result['failed'])}")
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
