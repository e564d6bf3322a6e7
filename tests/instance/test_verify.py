"""instance/verify.py for real: a small training job that saves checkpoints and resumes, the fake nvidia-smi, the
job as the login user in its own process group, every run bounded by maxMinutes."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from instance import run_job, verify
from tests.support.instance import fake_nvidia_smi
from tests.support.job_agent import data_directory
from tests.support.training import prepare, train


@pytest.fixture
def data() -> Iterator[Path]:
    with data_directory() as path:
        prepare(path)
        yield path


def settings(data: Path, tmp_path: Path, **spec: Any) -> dict[str, Any]:
    from tests.support.job_agent import JOB_USER

    return {
        "cloud": "aws",
        "mount_point": str(data),
        "data_owner": JOB_USER,
        "state_dir": str(tmp_path / "state"),
        "nvidia_smi": str(fake_nvidia_smi(tmp_path / "nvidia-smi", data / "gpu")),
        "verify_poll_seconds": 0.05,
        "metadata_url": "http://127.0.0.1:9",
        "metadata_timeout_seconds": 0.2,
        "verify": {"max_minutes": 1, **spec},
    }


def test_a_job_that_resumes_from_its_checkpoint_passes_every_check(data: Path, tmp_path: Path) -> None:
    s = settings(data, tmp_path, steps=40, min_free_gpu_memory_percent=10,
                 command=train(data, "--save-every", "5", "--announce-checkpoints"),
                 resume_command=train(data, "--resume", "--max-steps", "60"))
    result = verify.verify(s)
    assert result["passed"] is True, result
    assert result["failed"] == []
    assert {name: c["ok"] for name, c in result["checks"].items()} == {
        "run": True, "checkpoint": True, "resume": True, "gpu": True, "memory": True}
    # Killed at its first checkpoint (step 5), the resumed run started from it.
    assert result["checkpointStep"] == 5 and result["stepResumed"] == 5
    assert "stopped on purpose at its first checkpoint" in result["checks"]["run"]["detail"]
    gpu = result["gpu"]
    assert gpu["peakMemoryMib"] == 20000 and gpu["memoryTotalMib"] == 23028 and gpu["baselineMemoryMib"] == 0
    assert gpu["peakMemoryPercent"] == 86.9 and gpu["peakUtilizationPercent"] == 97
    assert "leaves 13.1% free; at least 10% asked" in result["checks"]["memory"]["detail"]
    assert result["seconds"]["run"] > 0 and result["seconds"]["resume"] > 0
    assert result["seconds"]["total"] == pytest.approx(result["seconds"]["run"] + result["seconds"]["resume"], abs=0.2)
    # The job saw the steps it was asked for and never ran to step 40: the kill came at the first checkpoint.
    log = (data / "logs" / "verify-run.log").read_text()
    assert "training from step 1 to 40" in log and "step 40 loss" not in log
    assert "GPULEASE_RESUMED_STEP=5" in (data / "logs" / "verify-resume.log").read_text()


def test_without_a_step_line_the_first_settled_checkpoint_file_counts_and_the_step_can_come_in_a_file(
    data: Path, tmp_path: Path
) -> None:
    s = settings(data, tmp_path, command=train(data, "--save-every", "3", "--step-seconds", "0.1"),
                 resume_command=train(data, "--resume", "--report", "file"))
    result = verify.verify(s)
    assert result["passed"] is True, result
    assert result["checkpointStep"] is None and result["stepResumed"] == 3
    assert "step-3.pt" in result["checks"]["checkpoint"]["detail"]


def test_a_job_that_starts_over_fails_the_resume_check(data: Path, tmp_path: Path) -> None:
    s = settings(data, tmp_path, command=train(data, "--announce-checkpoints"),
                 resume_command=train(data, "--resume", "--ignore-checkpoints"))
    result = verify.verify(s)
    assert result["passed"] is False and result["failed"] == ["resume"]
    assert result["stepResumed"] == 0
    assert "started over (resumed at step 0)" in result["checks"]["resume"]["detail"]


def test_a_resume_that_never_says_where_it_resumed_fails_with_the_contract_named(data: Path, tmp_path: Path) -> None:
    s = settings(data, tmp_path, command=train(data, "--announce-checkpoints"),
                 resume_command=train(data, "--resume", "--report", "none", "--max-steps", "8"))
    result = verify.verify(s)
    assert result["failed"] == ["resume"]
    assert "GPULEASE_RESUMED_STEP=<n>" in result["checks"]["resume"]["detail"]


def test_too_little_free_memory_and_an_idle_gpu_fail_their_checks(data: Path, tmp_path: Path) -> None:
    full = verify.verify(settings(data, tmp_path, min_free_gpu_memory_percent=20,
                                  command=train(data, "--max-steps", "6", "--memory", "22000")))
    assert full["failed"] == ["memory"]
    assert "leaves 4.5% free; at least 20% asked" in full["checks"]["memory"]["detail"]
    (data / "gpu" / "utilization.csv").write_text("0, 0, 23028\n")
    idle = verify.verify(settings(data, tmp_path, command=train(data, "--max-steps", "6", "--idle")))
    assert idle["failed"] == ["gpu"]
    assert "the framework did not use it" in idle["checks"]["gpu"]["detail"]


def test_a_failing_run_and_a_checkpoint_that_never_comes_fail(data: Path, tmp_path: Path) -> None:
    failing = verify.verify(settings(data, tmp_path, command="echo boom >&2; exit 3",
                                     resume_command=train(data, "--resume")))
    assert failing["failed"] == ["checkpoint", "gpu", "resume", "run"]
    assert failing["checks"]["run"]["detail"].startswith("exited 3 after")
    assert "boom" in (data / "logs" / "verify-run.log").read_text()


def test_a_run_past_max_minutes_is_killed_with_what_it_started(data: Path, tmp_path: Path) -> None:
    pid_file = data / "logs" / "child.pid"
    # A job that never checkpoints and leaves a child behind: the whole process group goes at the bound.
    command = f"sleep 300 & echo $! > {pid_file}; wait"
    started = time.monotonic()
    result = verify.verify(settings(data, tmp_path, command=command, resume_command="true"), speed=60)  # 1 s
    assert time.monotonic() - started < 20
    assert result["checks"]["run"] == {"ok": False, "detail": "did not finish within maxMinutes (1 min); its process "
                                       "group was killed"}
    assert result["checks"]["resume"]["detail"] == "not tried: there was no checkpoint to resume from"
    child = int(pid_file.read_text())
    for _ in range(100):
        if not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the job's child {child} outlived the verification")


def test_the_job_gets_a_clean_environment_with_the_documented_variables(data: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "do-not-pass")
    out = data / "logs" / "env.txt"
    verify.verify(settings(data, tmp_path, steps=7, command=f"env > {out}"))
    env = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert env["GPULEASE_VERIFY"] == "1" and env["GPULEASE_VERIFY_STEPS"] == "7"
    assert env["GPULEASE_CHECKPOINT_DIR"] == str(data / "checkpoints")
    assert env["GPULEASE_RESUME_STEP_FILE"] == str(data / "logs" / "resume-step")
    assert "AWS_SECRET_ACCESS_KEY" not in env
    if os.geteuid() == 0:
        assert env["USER"] != "root"


def test_run_job_records_the_result_and_does_not_start_the_job_after_a_failure(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s = {**run_job.DEFAULTS, **settings(data, tmp_path, command="exit 1"),
         "job": {"command": "touch started", "session": "train"}}
    assert run_job.run_verification(s) is False
    recorded = json.loads((tmp_path / "state" / "verify.json").read_text())
    assert recorded["passed"] is False and recorded["failed"] == ["gpu", "run"]
    assert json.loads((data / "logs" / "verify.json").read_text()) == recorded
    out = capsys.readouterr().out
    assert "VERIFY FAILED: gpu, run; the job is not started" in out
    assert "verify.json no checkpoint bucket: kept on the instance only" in out
