#!/usr/bin/env python3
"""gpulease-run: after the bootstrap, the verification, then the job in a tmux session (standard library only).

Run once per boot by ``gpulease-run.service``, which systemd starts only when the bootstrap reported the instance
ready (``Requires=``/``After=`` the bootstrap), and only on stacks that declare ``verify`` or ``job``:

1. ``verify`` (``verify.py``): its result goes to ``<state_dir>/verify.json``, ``<mount>/logs/verify.json`` and
   ``<checkpoint_uri>_gpulease/verify.json``; one line in the journal says PASSED or FAILED and why. A
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

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from typing import Any

try:
    from instance import cloud_access as ca
    from instance import control, manifest, verify
except ImportError:  # on the instance: the other tools are installed next to this file
    import cloud_access as ca  # type: ignore[no-redef]
    import control  # type: ignore[no-redef]
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


def run_verification(s: dict[str, Any]) -> bool:
    """Verify (or accept the pass this instance already recorded); True when the job may start."""
    state_file = os.path.join(s["state_dir"], "verify.json")
    instance = control.instance_facts(s).get("id")
    earlier = control.read_json(state_file)
    if earlier.get("passed") is True and instance and earlier.get("instanceId") == instance:
        say(f"verification passed earlier on {instance} ({earlier.get('time')}); not run again")
        return True
    result = verify.verify(s)
    result.update(instanceId=instance, experiment=s.get("experiment"))
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
    env = verify.job_environment(user, {"SHELL": "/bin/bash"})
    # tmux's server belongs to the login user: `gpulease ssh` attaches as that user to the same socket.
    code, _ = _as_user([tmux, "has-session", "-t", f"={session}"], env, ids)
    if code == 0:
        say(f"tmux session {session!r} already runs; left alone")
        return True
    logs = os.path.join(mount, "logs")
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


def _as_user(argv: list[str], env: dict[str, str], ids: dict[str, Any], timeout: float = 30) -> tuple[int | None, str]:
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
    if settings.get("verify") and not run_verification(settings):
        return 1
    if settings.get("job") and not start_job(settings):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
