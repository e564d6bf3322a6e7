#!/usr/bin/env python3
"""gpulease-run: after the bootstrap, the verification, then the job in a tmux session (standard library only).

Run once per boot by ``gpulease-run.service``, which systemd starts only when the bootstrap reported the instance
ready (``Requires=``/``After=`` the bootstrap), and only on stacks that declare ``verify`` or ``job``:

1. ``verify`` (``verify.py``): its result goes to ``<state_dir>/verify.json``, ``<mount>/logs/verify.json`` and
   ``<control_uri>verify.json``; one line in the journal says PASSED or FAILED and why. A
   verification that passed on this instance is not run again after a reboot. When it fails the job is NOT
   started (the exit status is 1) and the instance keeps its deadline and idle rules: it ends unattended.
2. ``job``: tmux is installed when the image lacks it (apt, bounded); the run manifest is written
   (``manifest.py``); then ``job.command`` starts with ``bash -l`` as the login user in the data directory,
   inside the tmux session ``job.session`` (``train``), its output also appended to
   ``<mount>/logs/<session>.log`` and its exit status written to ``<mount>/logs/<session>.exit`` (the session's
   script and tmux.conf are in ``<mount>/.gpulease/``). The session
   stays open after the job ends (``remain-on-exit``) so its last screen can be read. A session of that name
   that already runs is left alone. ``gpulease ssh STACK`` attaches to it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from typing import Any

try:
    from instance import bounds, control, manifest, verify
    from instance import cloud_access as ca
    from instance import instance_state as st
except ImportError:  # on the instance: the other tools are installed next to this file
    import bounds  # type: ignore[no-redef]
    import cloud_access as ca  # type: ignore[no-redef]
    import control  # type: ignore[no-redef]
    import instance_state as st  # type: ignore[no-redef]
    import manifest  # type: ignore[no-redef]
    import verify  # type: ignore[no-redef]

DEFAULTS: dict[str, Any] = {
    "mount_point": "/data",
    "data_owner": "ubuntu",
    "state_dir": "/var/lib/gpulease",
    "tmux": "tmux",
    "tmux_install_command": ["apt-get", "install", "-y", "-q", "tmux"],
    "tmux_install_timeout_seconds": 600,
}
# remain-on-exit: the job's last screen stays readable after it ends; a long history for a training log.
TMUX_CONF = "set-option -g remain-on-exit on\nset-option -g history-limit 50000\n"
RUN_DIR = ".gpulease"
"""Under the data directory: the tmux session's script and configuration."""
APT_ENV = {"DEBIAN_FRONTEND": "noninteractive", "NEEDRESTART_MODE": "l"}


def say(message: str) -> None:
    print(f"{control.now_stamp()} gpulease-run: {message}", flush=True)


def verification_fingerprint(s: dict[str, Any], instance_type: str | None, image_id: str | None = None) -> str:
    """What a passed verification vouches for: the stack, the experiment, the verification, the job's command, the
    instance type, the image and the kit's tools bundle (``tools.sha256``). A pass on the data disk counts for
    another instance only when all of them are the same: a replacement with a new image, or new tools, verifies
    again. (The record is on the data disk, which the login user owns: a convenience, not a security boundary.)"""
    job = s.get("job") if isinstance(s.get("job"), dict) else {}
    tools = s.get("tools") if isinstance(s.get("tools"), dict) else {}
    basis = {"stack": s.get("stack"), "experiment": s.get("experiment"), "verify": s.get("verify"),
             "job": job.get("command"), "instanceType": instance_type, "imageId": image_id,
             "tools": tools.get("sha256")}
    return hashlib.sha256(json.dumps(basis, sort_keys=True, default=str).encode()).hexdigest()


def run_verification(s: dict[str, Any]) -> bool:
    """Verify (or accept the pass this instance already recorded, or the pass on this experiment's data disk with
    the same fingerprint: a replacement instance after a reclaim); True when the job may start."""
    state_file = os.path.join(s["state_dir"], "verify.json")
    disk_file = os.path.join(s["mount_point"], "logs", "verify.json")
    facts = control.instance_facts(s)
    instance = facts.get("id")
    fingerprint = verification_fingerprint(s, facts.get("type"), facts.get("imageId"))
    earlier = control.read_json(state_file)
    if earlier.get("passed") is True and instance and earlier.get("instanceId") == instance:
        say(f"verification passed earlier on {instance} ({earlier.get('time')}); not run again")
        return True
    on_disk = control.read_json(disk_file)
    if on_disk.get("passed") is True and instance and on_disk.get("fingerprint") == fingerprint:
        say(f"verification passed on this experiment's data disk ({on_disk.get('instanceId')}, {on_disk.get('time')}) "
            "with the same stack, experiment, verification, job, instance type, image and tools; not run again")
        return True
    try:
        result = verify.verify(s)
    except Exception as exc:  # verify() reports its own failures; this is the last line of defence for verify.json
        result = {"passed": False, "failed": ["verify"], "checks": {"verify": {"ok": False, "detail": f"{exc}"}},
                  "gpu": {"peakMemoryMib": 0, "memoryTotalMib": None}, "seconds": {}, "stepResumed": None,
                  "time": control.now_stamp()}
    result.update(instanceId=instance, experiment=s.get("experiment"), stack=s.get("stack"), fingerprint=fingerprint)
    for path in (state_file, os.path.join(s["mount_point"], "logs", "verify.json")):
        try:
            control.write_json(path, result)
        except OSError as exc:
            say(f"cannot write {path}: {exc}")
    for name, check in result["checks"].items():
        state = "skipped" if check["ok"] is None else ("ok" if check["ok"] else "FAILED")
        say(f"verify {name}: {state}: {check['detail']}")
    gpu = result["gpu"]
    say(f"verify gpu memory: peak {gpu['peakMemoryMib']:g} of {gpu['memoryTotalMib'] or '?'} MiB; seconds "
        f"{result['seconds']}; step resumed {result['stepResumed']}")
    _, what = control.publish(s, state_file, "verify.json")
    say(f"verify.json {what}")
    if result["passed"]:
        say("VERIFY PASSED")
        return True
    say(f"VERIFY FAILED: {', '.join(result['failed'])}; the job is not started")
    return False


def ensure_tmux(s: dict[str, Any]) -> str | None:
    """The tmux executable, installed when missing; None (logged) when it cannot be had."""
    found = shutil.which(s["tmux"])
    if found:
        return found
    say("tmux is not installed; installing it")
    code, tail = ca.run_bounded(list(s["tmux_install_command"]), float(s["tmux_install_timeout_seconds"]),
                                env={**os.environ, **APT_ENV})
    found = shutil.which(s["tmux"])
    if not found:
        say(f"installing tmux failed ({'timed out' if code is None else f'exit {code}'}): {tail[-300:]}")
    return found


def runner_script(command: str, mount: str, log: str, exit_file: str) -> str:
    """The script the tmux session runs: the job, its output on screen and in the log, its exit status kept."""
    return (
        "#!/bin/bash -l\n"
        f"cd {shlex.quote(mount)} || exit 1\n"
        "set -o pipefail\n"
        f"( {command}\n) 2>&1 | tee -a {shlex.quote(log)}\n"
        "code=$?\n"
        f"echo \"$code\" > {shlex.quote(exit_file)}\n"
        "echo \"[gpulease] the job exited $code\"\n"
        "exit \"$code\"\n"
    )


def start_job(s: dict[str, Any]) -> bool:
    job = s["job"]
    session, mount = job.get("session") or "train", s["mount_point"]
    try:
        ids, user = verify.login_user(s["data_owner"])
    except verify.RunAsError as exc:
        say(f"job not started: {exc}")
        return False
    tmux = ensure_tmux(s)
    if tmux is None:
        say("job not started: no tmux")
        return False
    # tmux starts a pane's command with $SHELL, else the account's shell (which may be nologin): bash, always.
    # The resume contract (docs/run.md): where the checkpoints are, the file a resumed job writes its step to, and
    # on a resumption (this instance booted again) the step of the newest checkpoint it reported.
    logs = os.path.join(mount, "logs")
    resume = resume_environment(s, session)
    env = verify.job_environment(user, {"SHELL": "/bin/bash", **resume})
    # tmux's server belongs to the login user: `gpulease ssh` attaches as that user to the same socket.
    code, _ = _as_user([tmux, "has-session", "-t", f"={session}"], env, ids)
    if code == 0:
        say(f"tmux session {session!r} already runs; left alone")
        return True
    os.makedirs(logs, exist_ok=True)
    # The session's script and tmux.conf: where the login user can read them (the state directory is root's),
    # in a folder the user cannot write (root's, 0755).
    run_dir = os.path.join(mount, RUN_DIR)
    os.makedirs(run_dir, mode=0o755, exist_ok=True)
    os.chmod(run_dir, 0o755)
    script = os.path.join(run_dir, f"job-{session}.sh")
    conf = os.path.join(run_dir, "tmux.conf")
    with open(script, "w", encoding="utf-8") as fh:
        fh.write(runner_script(job["command"], mount, os.path.join(logs, f"{session}.log"),
                               os.path.join(logs, f"{session}.exit")))
    os.chmod(script, 0o755)
    with open(conf, "w", encoding="utf-8") as fh:
        fh.write(TMUX_CONF)
    os.chmod(conf, 0o644)
    manifest.write(s, command=job["command"], cwd=mount, job=session, params_file=job.get("params_file"), say=say)
    code, tail = _as_user([tmux, "-f", conf, "new-session", "-d", "-s", session, "-c", mount, script], env, ids)
    if code != 0:
        say(f"job not started: tmux new-session exited {code}: {tail[-300:]}")
        return False
    say(f"job started as {user.pw_name} in tmux session {session!r} (attach: tmux attach -t {session}); output also "
        f"in {logs}/{session}.log")
    return True


def last_checkpoint_step(log_path: str, max_bytes: int = 4 * 1024 * 1024) -> int | None:
    """The step of the last complete ``GPULEASE_CHECKPOINT_STEP=<n>`` line of the job's log (its tail), or None."""
    try:
        with open(log_path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            data = fh.read(max_bytes)
    except OSError:
        return None
    data = data[: data.rfind(b"\n") + 1]
    found = verify.CHECKPOINT_LINE.findall(data)
    for digits in reversed(found):
        try:
            return verify._step(digits)
        except verify.StepError:
            continue
    return None


def resume_environment(s: dict[str, Any], session: str) -> dict[str, str]:
    """The job's resume contract; on a resumption also ``GPULEASE_RESUMED=1`` and ``GPULEASE_RESUME_FROM_STEP``,
    and the step is recorded on the interruption (identity.json, then the run manifest)."""
    mount = s["mount_point"]
    env = {"GPULEASE_CHECKPOINT_DIR": os.path.join(mount, "checkpoints"),
           "GPULEASE_RESUME_STEP_FILE": os.path.join(mount, "logs", "resume-step")}
    claim = st.claim_for(s, lambda: control.instance_facts(s).get("id"), control.now_epoch(), warn=say)
    same_instance = claim.kind == "resumed" or (claim.kind == "same-boot" and _resumed_this_boot(claim))
    earlier = None if same_instance else _earlier_instance_on_disk(s, claim.instance_id, session)
    if not same_instance and earlier is None:
        return env
    if earlier is not None:
        say(f"the data disk carries this experiment's job from instance {earlier}: a resumption on the same disk")
    step = last_checkpoint_step(os.path.join(mount, "logs", f"{session}.log"))
    env["GPULEASE_RESUMED"] = "1"
    if step is not None:
        env["GPULEASE_RESUME_FROM_STEP"] = str(step)
    try:
        if earlier is not None:  # a new instance on the same disk: recorded as a resumption of its own kind
            st.record_new_instance(s["state_dir"], claim, earlier, control.now_epoch(), _last_write(s, session))
        st.record_resumed_step(s["state_dir"], step, claim.boot)
    except OSError as exc:
        say(f"the resumed step is not recorded: {exc}")
    say("resuming after an interruption: the job starts again" + (f" from the checkpoint at step {step}"
                                                                   if step is not None else ""))
    return env


def _earlier_instance_on_disk(s: dict[str, Any], instance: str | None, session: str) -> str | None:
    """Another instance's id when the data disk's run manifest (written when that instance started this job) names
    the same stack, experiment and job: a replacement instance on the retained disk resumes the same experiment."""
    found = control.read_json(os.path.join(s["mount_point"], "logs", manifest.MANIFEST_FILE))
    other = (found.get("instance") or {}).get("id") if isinstance(found.get("instance"), dict) else None
    same = all(found.get(k) == s.get(k) for k in ("stack", "experiment")) and found.get("job") == session
    if not same or not isinstance(other, str) or not other or other == instance or s.get("stack") is None:
        return None
    return other


def _last_write(s: dict[str, Any], session: str) -> float | None:
    """When the previous instance last wrote this job's files on the data disk (the job's log, the run manifest),
    read before this instance writes either: its last sign of life there. A file that is not a regular file (a
    symlink, a FIFO) is not read; none: None."""
    found = []
    for name in (f"{session}.log", manifest.MANIFEST_FILE):
        try:
            info = os.lstat(os.path.join(s["mount_point"], "logs", name))
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            found.append(info.st_mtime)
    return max(found) if found else None


def _resumed_this_boot(claim: st.Claim) -> bool:
    """This boot began as a resumption (claimed first by the watchdog or the bootstrap): its boot is not the first."""
    boots = claim.identity.get("boots") if isinstance(claim.identity.get("boots"), list) else []
    return len(boots) > 1


def _as_user(argv: list[str], env: dict[str, str], ids: dict[str, Any],
            timeout: float = bounds.value("as_user")) -> tuple[int | None, str]:
    """``argv`` as the login user, bounded, its output in a file (tmux's client returns as soon as the detached
    server runs; the server leaves the client's process group and outlives it on purpose)."""
    with tempfile.TemporaryFile() as out:
        try:
            proc = subprocess.Popen(argv, env=env, cwd="/", stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, **ids)
        except OSError as exc:
            return 127, str(exc)
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            code = None
        out.seek(0)
        return code, out.read().decode("utf-8", "replace")


def main() -> int:
    path = os.environ.get("GPULEASE_SETTINGS", "/etc/gpulease/settings.json")
    try:
        settings = {**DEFAULTS, **ca.load_settings(path)}
    except ca.SettingsError as exc:
        print(f"gpulease-run: cannot read settings: {exc}", file=sys.stderr, flush=True)
        return 2
    claim = st.claim_for(settings, lambda: control.instance_facts(settings).get("id"), control.now_epoch(), warn=say)
    try:
        not_ready = bootstrap_not_ready(settings, claim.boot)
        if not_ready:
            # The unit starts after the bootstrap whatever it reported (Wants=, not Requires=), so that this line
            # says why nothing runs instead of systemd skipping the unit silently.
            say(f"NOT STARTED: {not_ready}; the instance keeps its deadline and idle rules")
            return 1
        if settings.get("verify") and not run_verification(settings):
            return 1
    finally:
        with contextlib.suppress(OSError):  # the idle rule counts from the end of the verification
            st.mark_progress(settings["state_dir"], claim.boot, "verify", control.now_epoch())
    if settings.get("job") and not start_job(settings):
        return 1
    return 0


def bootstrap_not_ready(s: dict[str, Any], boot: str) -> str | None:
    """Why the job may not start after the bootstrap (None when the bootstrap reported ready on this boot)."""
    try:
        ready = st.read_state_file(os.path.join(s["state_dir"], "ready.json"))
    except st.StateFileError as exc:
        return f"the bootstrap's report cannot be read ({exc})"
    if not ready:
        return "the bootstrap wrote no ready.json (it did not finish, or was stopped at its time bound)"
    if ready.get("boot") not in (None, boot):
        return "the bootstrap has not reported on this boot (ready.json is from an earlier one)"
    if ready.get("ready") is not True:
        failed = ready.get("failed") if isinstance(ready.get("failed"), list) else []
        return f"the bootstrap reported NOT READY ({', '.join(str(f) for f in failed) or 'no reason given'})"
    return None


if __name__ == "__main__":
    sys.exit(main())
