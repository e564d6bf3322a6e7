"""instance/run_job.py: job.command in a named tmux session as the login user in /data, the manifest first; tmux
installed when missing."""

from __future__ import annotations

import json
import os
import pwd
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from instance import run_job
from tests.support.job_agent import JOB_USER, data_directory
from tests.support.programs import required

required("tmux")  # fails in CI when missing, never skipped there


def _tmux_as_user(*args: str) -> subprocess.CompletedProcess[str]:
    user = pwd.getpwnam(JOB_USER)
    ids: dict[str, Any] = {"user": user.pw_uid, "group": user.pw_gid} if os.geteuid() == 0 else {}
    return subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=30, cwd="/",
                          env={"PATH": "/usr/bin:/bin", "HOME": user.pw_dir}, **ids)


@pytest.fixture
def session() -> Iterator[str]:
    name = f"t{secrets.token_hex(4)}"
    yield name
    _tmux_as_user("kill-session", "-t", f"={name}")


def _settings(data: Path, tmp_path: Path, command: str, session: str) -> dict[str, Any]:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    return {**run_job.DEFAULTS, "mount_point": str(data), "data_owner": JOB_USER, "state_dir": str(state),
            "stack": "s", "experiment": "e", "metadata_url": "http://127.0.0.1:9", "metadata_timeout_seconds": 0.2,
            "nvidia_smi": "/bin/false", "job": {"command": command, "session": session,
                                                "params_file": "params.json"}}


def _wait_for(path: Path, seconds: float = 20) -> str:
    for _ in range(int(seconds / 0.05)):
        if path.exists() and path.read_text().strip():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


def test_the_job_runs_in_its_tmux_session_as_the_login_user_in_the_data_directory(
    tmp_path: Path, session: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with data_directory() as data:
        os.chmod(data / "logs", 0o777)
        (data / "params.json").write_text('{"seed": 3}')
        s = _settings(data, tmp_path, "pwd; id -un; echo the job ran; exit 4", session)
        assert run_job.start_job(s) is True
        assert _wait_for(data / "logs" / f"{session}.exit").strip() == "4"
        log = (data / "logs" / f"{session}.log").read_text().splitlines()
        assert log == [str(data), JOB_USER, "the job ran"]
        # The session stays (remain-on-exit): its last screen can still be read by the user who attaches.
        assert _tmux_as_user("has-session", "-t", f"={session}").returncode == 0
        manifest = json.loads((data / "logs" / "manifest.json").read_text())
        assert manifest["job"] == session and manifest["params"]["content"] == {"seed": 3}
        out = capsys.readouterr().out
        assert f"job started as {JOB_USER} in tmux session {session!r}" in out
        # A second start (the unit after a reboot that kept the server, or by hand) leaves the session alone.
        assert run_job.start_job(s) is True
        assert f"tmux session {session!r} already runs; left alone" in capsys.readouterr().out


def test_without_tmux_it_is_installed_and_a_failed_install_keeps_the_job_back(
    tmp_path: Path, session: str, capsys: pytest.CaptureFixture[str]
) -> None:
    installer = tmp_path / "apt-get"
    installer.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/asked\necho 'E: Unable to locate package' >&2\nexit 100\n")
    installer.chmod(0o755)
    with data_directory() as data:
        s = {**_settings(data, tmp_path, "true", session), "tmux": "tmux-not-here",
             "tmux_install_command": [str(installer), "install", "-y", "tmux"]}
        assert run_job.start_job(s) is False
    assert (tmp_path / "asked").read_text().split() == ["install", "-y", "tmux"]
    out = capsys.readouterr().out
    assert "tmux is not installed; installing it" in out
    assert "installing tmux failed (exit 100): E: Unable to locate package" in out
    assert "job not started: no tmux" in out


def test_main_stops_before_the_job_when_the_verification_fails(tmp_path: Path, session: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    with data_directory() as data:
        s = {**_settings(data, tmp_path, "touch should-not-exist", session),
             "verify": {"command": "exit 2", "max_minutes": 1}, "verify_poll_seconds": 0.05}
        path = tmp_path / "settings.json"
        path.write_text(json.dumps({**s, "cloud": "aws", "region": "us-east-1"}))
        (tmp_path / "state" / "ready.json").write_text(json.dumps({"ready": True}))  # the bootstrap passed
        monkeypatch.setenv("GPULEASE_SETTINGS", str(path))
        assert run_job.main() == 1
        assert json.loads((tmp_path / "state" / "verify.json").read_text())["passed"] is False
        assert not (data / "should-not-exist").exists()
        assert _tmux_as_user("has-session", "-t", f"={session}").returncode != 0


@pytest.mark.parametrize(("ready", "said"), [
    (None, "NOT STARTED: the bootstrap wrote no ready.json (it did not finish, or was stopped at its time bound)"),
    ({"ready": False, "failed": ["disk", "gpu"]}, "NOT STARTED: the bootstrap reported NOT READY (disk, gpu)"),
    ({"ready": True, "boot": "an-earlier-boot"}, "NOT STARTED: the bootstrap has not reported on this boot"),
    ("[1, 2]", "NOT STARTED: the bootstrap's report cannot be read"),
])
def test_main_says_why_nothing_starts_when_the_bootstrap_is_not_ready(
    tmp_path: Path, session: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    ready: Any, said: str,
) -> None:
    with data_directory() as data:
        s = {**_settings(data, tmp_path, "touch should-not-exist", session), "boot_time": 1_796_000_000,
             "proc_root": str(tmp_path)}
        path = tmp_path / "settings.json"
        path.write_text(json.dumps({**s, "cloud": "aws", "region": "us-east-1"}))
        if ready is not None:
            (tmp_path / "state" / "ready.json").write_text(ready if isinstance(ready, str) else json.dumps(ready))
        monkeypatch.setenv("GPULEASE_SETTINGS", str(path))
        assert run_job.main() == 1
        assert said in capsys.readouterr().out
        assert not (data / "should-not-exist").exists()
        # The idle rule is told the setup is over: an instance that cannot run its job ends unattended.
        progress = json.loads((tmp_path / "state" / "boot-progress.json").read_text())
        assert progress["boot"] == "btime-1796000000" and isinstance(progress["verify"], float)


def test_a_resumed_boot_gives_the_job_its_resume_contract_and_records_the_step(tmp_path: Path) -> None:
    from instance import instance_state as st

    state = tmp_path / "state"
    first = st.claim(str(state), "i-0abc", "boot-1", 1_796_000_000, 1_796_003_600)
    st.expect_stop(str(state), first, "spot-interruption: spot instance-action stop")  # the notice was handled
    st.claim(str(state), "i-0abc", "btime-1796010000", 1_796_010_000, 1_796_010_000)  # stopped, started again
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "train.log").write_text("step 1\nGPULEASE_CHECKPOINT_STEP=100\nGPULEASE_CHECKPOINT_STEP=200\nGPULEASE_CHECKP")
    s = {**run_job.DEFAULTS, "mount_point": str(tmp_path), "state_dir": str(state), "boot_time": 1_796_010_000,
         "proc_root": str(tmp_path), "metadata_url": "http://127.0.0.1:9", "metadata_timeout_seconds": 0.2,
         "instance_id_file": str(tmp_path / "instance-id")}
    (tmp_path / "instance-id").write_text("i-0abc\n")
    os.utime(tmp_path / "instance-id", (1_796_010_060, 1_796_010_060))  # cloud-init's record of this boot
    env = run_job.resume_environment(s, "train")
    assert env == {"GPULEASE_CHECKPOINT_DIR": str(tmp_path / "checkpoints"),
                   "GPULEASE_RESUME_STEP_FILE": str(tmp_path / "logs" / "resume-step"),
                   "GPULEASE_RESUMED": "1", "GPULEASE_RESUME_FROM_STEP": "200"}
    [stop] = json.loads((state / "identity.json").read_text())["interruptions"]
    assert stop["resumedFromStep"] == 200 and stop["stoppedSeconds"] == 6400
