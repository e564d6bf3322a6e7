"""The watchdog's deadline and idle rules, run in-process on a virtual clock with real stand-in commands."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from tests.support.instance import DEADLINE_EPOCH, events, iso, make_rig, run_in_process, set_gpus

MIN = 60.0
FAR = DEADLINE_EPOCH - 10 * 3600  # ten hours before the deadline: only idle can end the run


def decision_times(log: str, event: str) -> list[str]:
    return re.findall(rf"^(\S+) {re.escape(event)}: ", log, flags=re.M)


def test_deadline_warns_then_checkpoints_syncs_and_shuts_down_before_it(tmp_path: Path) -> None:
    rig = make_rig(tmp_path, checkpoint_interval_minutes=60)
    dog, clock = run_in_process(rig, start=DEADLINE_EPOCH - 20 * MIN)
    assert dog.done
    log = rig.log_text()
    # The warning fires exactly warn_minutes before the deadline, the final sequence final_sync_minutes before it.
    assert decision_times(log, "deadline-warning") == [iso(DEADLINE_EPOCH - 15 * MIN)]
    assert decision_times(log, "deadline") == [iso(DEADLINE_EPOCH - 5 * MIN)]
    assert rig.names() == ["warn-hook", "checkpoint-hook", "sync", "shutdown"]
    seen = events(rig.events)
    assert seen[0]["env_reason"] == "deadline"
    sync = seen[2]
    assert sync["argv"] == ["s3", "sync", str(rig.checkpoints), "s3://bucket/ckpt/", "--region", "us-east-1"]
    assert sync["listing"][str(rig.checkpoints)] == ["step-100.pt"]
    assert clock.now() < DEADLINE_EPOCH


def test_a_deadline_already_passed_at_start_ends_the_instance_at_once(tmp_path: Path) -> None:
    rig = make_rig(tmp_path)
    dog, _ = run_in_process(rig, start=DEADLINE_EPOCH + 3 * MIN, max_ticks=3)
    assert dog.done
    assert rig.names() == ["checkpoint-hook", "sync", "shutdown"]
    assert decision_times(rig.log_text(), "deadline") == [iso(DEADLINE_EPOCH + 3 * MIN)]


def _wait_for_sync(dog) -> None:
    deadline = time.monotonic() + 20
    while dog.sync_job is not None and time.monotonic() < deadline:
        dog._check_sync()
        time.sleep(0.02)


def test_periodic_sync_runs_every_interval_in_the_background(tmp_path: Path) -> None:
    rig = make_rig(tmp_path, checkpoint_interval_minutes=2)
    dog, _clock = run_in_process(rig, start=FAR, max_ticks=1)
    for _ in range(3):
        dog.run(max_ticks=int(2 * MIN / 5))
        _wait_for_sync(dog)
    log = rig.log_text()
    assert re.findall(r"^(\S+) sync: periodic sync started", log, flags=re.M) == [
        iso(FAR + 2 * MIN), iso(FAR + 4 * MIN), iso(FAR + 6 * MIN)
    ]
    assert log.count("periodic sync exited 0") == 3
    syncs = [e for e in events(rig.events) if e["name"] == "sync"]
    assert [e["argv"] for e in syncs] == [["s3", "sync", str(rig.checkpoints), "s3://bucket/ckpt/", "--region", "us-east-1"]] * 3
    assert "shutdown" not in rig.names()


def test_a_slow_periodic_sync_is_not_started_twice_and_makes_way_for_the_final_one(tmp_path: Path) -> None:
    from tests.support.instance import recorder

    rig = make_rig(tmp_path, checkpoint_interval_minutes=2)
    flag = tmp_path / "sync-is-slow"
    flag.touch()
    slow = recorder(
        tmp_path / "bin" / "slow-sync", "sync", rig.events, extra=f"import time\nif os.path.exists({str(flag)!r}): time.sleep(60)"
    )
    rig.settings["sync_command"] = [str(slow), "{src}", "{dst}"]
    dog, clock = run_in_process(rig, start=FAR, max_ticks=int(5 * MIN / 5))
    assert "the previous periodic sync is still running; skipping this one" in rig.log_text()
    dog.s["sync_command"] = make_rig(tmp_path).settings["sync_command"]  # the final sync is a quick one
    clock.jump(DEADLINE_EPOCH - 5 * MIN - clock.now())  # the wall clock reaches the deadline; the sync is not hung
    dog.run(max_ticks=5)
    log = rig.log_text()
    assert "periodic sync stopped to make way for the final sync" in log
    assert "final-sync: exited 0" in log
    assert dog.done and rig.names()[-2:] == ["sync", "shutdown"]


def test_idle_gpu_shuts_down_after_idle_minutes_with_a_sync_and_no_hook(tmp_path: Path) -> None:
    rig = make_rig(tmp_path, idle_minutes=30)
    set_gpus(rig.gpu_state, util=[0, 3])
    dog, _clock = run_in_process(rig, start=FAR)
    assert dog.done
    assert decision_times(rig.log_text(), "idle-shutdown") == [iso(FAR + 30 * MIN)]
    assert rig.names() == ["sync", "shutdown"]


def test_one_busy_gpu_is_not_idle(tmp_path: Path) -> None:
    rig = make_rig(tmp_path, idle_minutes=10)
    set_gpus(rig.gpu_state, util=[0, 40])
    dog, _ = run_in_process(rig, start=FAR, max_ticks=int(25 * MIN / 5))
    assert not dog.done and "shutdown" not in rig.names()
    assert "GPU utilization 40% >= 5%" in rig.log_text()


def test_busy_marker_keeps_an_idle_instance_and_its_removal_restarts_the_count(tmp_path: Path) -> None:
    rig = make_rig(tmp_path, idle_minutes=10)
    set_gpus(rig.gpu_state, util=0)
    marker = Path(rig.settings["busy_marker"])
    marker.touch()
    dog, clock = run_in_process(rig, start=FAR, max_ticks=int(25 * MIN / 5))
    assert not dog.done and "shutdown" not in rig.names()
    assert f"busy marker {marker} is present" in rig.log_text()
    removed_at = clock.now()
    marker.unlink()
    dog.run(max_ticks=int(20 * MIN / 5))
    assert dog.done and rig.names() == ["sync", "shutdown"]
    (shutdown_at,) = decision_times(rig.log_text(), "idle-shutdown")
    # 10 idle minutes counted from the removal, not from the start of the run (checks are a minute apart).
    assert iso(removed_at + 10 * MIN) <= shutdown_at <= iso(removed_at + 11 * MIN)


def test_a_stale_busy_marker_is_ignored_when_a_maximum_age_is_set(tmp_path: Path) -> None:
    rig = make_rig(tmp_path, idle_minutes=10, busy_marker_max_age_minutes=60)
    set_gpus(rig.gpu_state, util=0)
    marker = Path(rig.settings["busy_marker"])
    marker.touch()
    os.utime(marker, (FAR - 3 * 3600, FAR - 3 * 3600))
    dog, _ = run_in_process(rig, start=FAR)
    assert dog.done and rig.names() == ["sync", "shutdown"]
    assert "busy-marker-stale" in rig.log_text()


def test_a_live_ssh_session_keeps_an_idle_instance(tmp_path: Path) -> None:
    rig = make_rig(tmp_path, idle_minutes=10)
    set_gpus(rig.gpu_state, util=0)
    proc = Path(rig.settings["proc_root"])
    (proc / "812").mkdir()
    (proc / "812" / "cmdline").write_bytes(b"sshd: ubuntu [priv]\0")  # privilege-separation parent: not a session
    (proc / "813").mkdir()
    (proc / "813" / "cmdline").write_bytes(b"sshd: ubuntu@pts/0\0\0")
    dog, _ = run_in_process(rig, start=FAR, max_ticks=int(25 * MIN / 5))
    assert not dog.done and "shutdown" not in rig.names()
    assert "1 live session(s): sshd: ubuntu@pts/0" in rig.log_text()
    (proc / "813" / "cmdline").unlink()
    (proc / "813").rmdir()
    dog.run(max_ticks=int(20 * MIN / 5))
    assert dog.done and rig.names() == ["sync", "shutdown"]


def test_an_unreadable_gpu_is_reported_and_counts_as_idle_only_after_the_grace_period(tmp_path: Path) -> None:
    rig = make_rig(tmp_path, idle_minutes=10, gpu_grace_minutes=20)
    set_gpus(rig.gpu_state, fail=True)
    dog, _ = run_in_process(rig, start=FAR, max_ticks=int(19 * MIN / 5))
    assert not dog.done and "shutdown" not in rig.names()  # within the grace period: never shut down on a guess
    log = rig.log_text()
    assert "gpu-unreadable: nvidia-smi exited 9" in log and "not counted as idle for the first 20 min" in log
    dog.run(max_ticks=int(10 * MIN / 5))
    assert dog.done and rig.names() == ["sync", "shutdown"]
    # Unreadable since FAR: counted as idle from then on once the grace period is over (20 >= 10 idle minutes).
    assert decision_times(rig.log_text(), "idle-shutdown") == [iso(FAR + 20 * MIN)]


@pytest.mark.parametrize(
    ("problem", "seen"),
    [("missing", "nvidia-smi is missing"), ("na", "nvidia-smi printed no readable GPU line: '[N/A], [N/A]'"),
     ("empty", "nvidia-smi listed no GPU")],
)
def test_a_missing_or_unreadable_nvidia_smi_still_ends_an_idle_instance(tmp_path: Path, problem: str, seen: str) -> None:
    rig = make_rig(tmp_path, idle_minutes=10, gpu_grace_minutes=10)
    if problem == "missing":
        rig.settings["nvidia_smi"] = str(tmp_path / "bin" / "no-such-nvidia-smi")
    else:
        (rig.gpu_state / "utilization.csv").write_text("[N/A], [N/A]\n" if problem == "na" else "")
    dog, _ = run_in_process(rig, start=FAR, max_ticks=int(30 * MIN / 5))
    assert dog.done and rig.names() == ["sync", "shutdown"]
    assert seen in rig.log_text()
    assert decision_times(rig.log_text(), "idle-shutdown") == [iso(FAR + 10 * MIN)]


def test_an_unreadable_gpu_with_a_busy_marker_is_not_idle(tmp_path: Path) -> None:
    rig = make_rig(tmp_path, idle_minutes=10, gpu_grace_minutes=5)
    set_gpus(rig.gpu_state, fail=True)
    Path(rig.settings["busy_marker"]).touch()
    dog, _ = run_in_process(rig, start=FAR, max_ticks=int(30 * MIN / 5))
    assert not dog.done and "shutdown" not in rig.names()


def test_a_failing_shutdown_command_is_retried(tmp_path: Path) -> None:
    rig = make_rig(tmp_path)
    failing = tmp_path / "bin" / "shutdown-fails"
    from tests.support.instance import recorder

    rig.settings["shutdown_command"] = [str(recorder(failing, "shutdown", rig.events, exit_code=1))]
    dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 5 * MIN, max_ticks=40)
    assert rig.names().count("shutdown") >= 3  # asked again every minute while the instance is still up
    assert not dog.done
