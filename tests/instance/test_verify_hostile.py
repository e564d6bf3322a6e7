"""instance/verify.py against hostile jobs: steps that are not steps, a step line split across two reads, a resume
from another step than the checkpoint's, a daemon that leaves with setsid, and a login user that is root."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from instance import run_job, verify
from tests.support.instance import fake_nvidia_smi, set_gpus
from tests.support.job_agent import JOB_USER, data_directory


@pytest.fixture
def data() -> Iterator[Path]:
    with data_directory() as path:
        set_gpus(path / "gpu", util=50)
        (path / "logs").chmod(0o777)  # the job (the login user) writes its resume step there
        yield path


def _settings(data: Path, tmp_path: Path, command: str, resume: str, **extra: Any) -> dict[str, Any]:
    return {"cloud": "aws", "mount_point": str(data), "data_owner": JOB_USER, "state_dir": str(tmp_path / "state"),
            "nvidia_smi": str(fake_nvidia_smi(tmp_path / "nvidia-smi", data / "gpu")), "verify_poll_seconds": 0.05,
            "metadata_url": "http://127.0.0.1:9", "metadata_timeout_seconds": 0.2,
            "verify": {"max_minutes": 1, "command": command, "resume_command": resume}, **extra}


def _detail(result: dict[str, Any], check: str) -> str:
    return result["checks"][check]["detail"]


@pytest.mark.parametrize(("resume", "said"), [
    ("echo GPULEASE_RESUMED_STEP=$(printf '9%.0s' $(seq 5000)); sleep 5",
     "resumeCommand reported the step it resumed at as '99999999999999999999... (5000 characters)' is not a step"),
    ("printf '\\302\\262' > \"$GPULEASE_RESUME_STEP_FILE\"; sleep 5",
     "resumeCommand reported the step it resumed at as '²' is not a step number (1 to 18 digits 0-9)"),
])
def test_a_step_that_is_not_a_step_fails_the_resume_check_with_a_verify_json(data: Path, tmp_path: Path, resume: str,
                                                                             said: str) -> None:
    s = _settings(data, tmp_path, "echo GPULEASE_CHECKPOINT_STEP=5; sleep 30", resume)
    result = verify.verify(s)
    assert result["passed"] is False and result["failed"] == ["resume"]
    assert said in _detail(result, "resume")
    # run_job writes verify.json saying why, as for every failure.
    assert run_job.run_verification(s) is False
    recorded = (tmp_path / "state" / "verify.json").read_text()
    assert "is not a step" in recorded


def test_a_checkpoint_line_split_across_two_reads_is_read_whole(data: Path, tmp_path: Path) -> None:
    s = _settings(data, tmp_path, "printf 'GPULEASE_CHECKPOINT_STEP=2'; sleep 0.6; printf '0\\n'; sleep 30",
                  "echo GPULEASE_RESUMED_STEP=20; sleep 5")
    result = verify.verify(s)
    assert result["checkpointStep"] == 20 and result["stepResumed"] == 20
    assert result["checks"]["resume"] == {"ok": True, "detail": "resumed at step 20 (checkpoint at step 20)"}


@pytest.mark.parametrize("resumed", [10, 25])
def test_a_resume_from_another_step_than_the_checkpoints_is_refused(data: Path, tmp_path: Path, resumed: int) -> None:
    s = _settings(data, tmp_path, "echo GPULEASE_CHECKPOINT_STEP=20; sleep 30",
                  f"echo GPULEASE_RESUMED_STEP={resumed}; sleep 5")
    result = verify.verify(s)
    assert result["passed"] is False and result["failed"] == ["resume"]
    assert _detail(result, "resume") == (f"resumed at step {resumed}, not at the checkpoint's step 20 (a resume must "
                                         "continue from the checkpoint it was given)")


def test_a_daemon_started_with_setsid_is_ended_with_the_run(data: Path, tmp_path: Path) -> None:
    pid_file = data / "daemon.pid"
    daemon = f"setsid sh -c 'echo $$ > {pid_file}; exec sleep 300' & sleep 0.5; echo GPULEASE_CHECKPOINT_STEP=1; sleep 30"
    s = _settings(data, tmp_path, daemon, "echo GPULEASE_RESUMED_STEP=1; sleep 5")
    result = verify.verify(s)
    assert result["checks"]["resume"]["ok"] is True, result
    pid = int(pid_file.read_text())
    assert os.getsid(pid) == pid if _alive(pid) else True  # it did leave the group and the session
    for _ in range(100):
        if not _alive(pid):
            break
        time.sleep(0.05)
    assert not _alive(pid), f"the setsid daemon {pid} outlived the verification"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_an_internal_failure_still_ends_in_a_verify_json_saying_why(data: Path, tmp_path: Path) -> None:
    s = _settings(data, tmp_path, "true", "true")
    s["verify"]["max_minutes"] = "not a number"
    result = verify.verify(s)
    assert result["passed"] is False and result["failed"] == ["verify"]
    assert _detail(result, "verify").startswith("the verification itself failed: ValueError:")


@pytest.mark.skipif(os.geteuid() != 0, reason="the refusal is of running as root, which needs root to try")
def test_verify_and_the_job_never_run_as_root(data: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran-as-root"
    s = _settings(data, tmp_path, f"touch {marker}", "true", data_owner="root",
                  job={"command": f"touch {marker}", "session": "never"})
    with pytest.raises(verify.RunAsError, match="jobs never run as root"):
        verify.login_user("root")
    result = verify.verify(s)
    assert result["passed"] is False
    assert _detail(result, "run") == "not run: the login user 'root' is root; jobs never run as root"
    assert run_job.start_job(s) is False
    time.sleep(0.2)
    assert not marker.exists()


def test_a_pass_recorded_by_another_instance_is_not_trusted(data: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from tests.support.instance import MetadataServer, MetadataState

    state = tmp_path / "state"
    state.mkdir()
    (state / "verify.json").write_text(json.dumps({"passed": True, "instanceId": "i-0other", "time": "earlier"}))
    with MetadataServer(MetadataState()) as server:
        s = {**_settings(data, tmp_path, "echo GPULEASE_CHECKPOINT_STEP=3; sleep 30",
                         "echo GPULEASE_RESUMED_STEP=3; sleep 5"), "metadata_url": server.url}
        assert run_job.run_verification(s) is True
        assert "not run again" not in capsys.readouterr().out
        assert json.loads((state / "verify.json").read_text())["instanceId"] == "i-0123456789abcdef0"
        assert (data / "logs" / "verify-run.log").exists()
        # The same instance on its next boot: the pass it recorded stands.
        (data / "logs" / "verify-run.log").unlink()
        assert run_job.run_verification(s) is True
        assert "verification passed earlier on i-0123456789abcdef0" in capsys.readouterr().out
        assert not (data / "logs" / "verify-run.log").exists()
