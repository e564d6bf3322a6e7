"""The watchdog under the faults that froze or blinded it, run for real: real hooks and syncs (processes), a real
loopback metadata service, the virtual clock. Time bounds are generous correctness bounds, not benchmarks."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from pathlib import Path

from tests.support.instance import (
    DEADLINE_EPOCH,
    MetadataServer,
    MetadataState,
    events,
    iso,
    make_rig,
    recorder,
    run_in_process,
)

MIN = 60.0
FAR = DEADLINE_EPOCH - 10 * 3600


def _wait_for_sync(dog) -> None:
    """Let a periodic sync the loop started finish in real time (a loaded machine starts processes slowly)."""
    end = time.monotonic() + 20
    while dog.sync_job is not None and time.monotonic() < end:
        dog._check_sync()
        time.sleep(0.02)


def test_a_hook_that_leaves_a_daemon_behind_never_freezes_the_watchdog(tmp_path: Path) -> None:
    # The hook starts a daemon in a session of its own (out of reach of the hook's process group) that keeps the
    # hook's stdout and stderr open, then hangs itself until it is cut short.
    daemon_pid = tmp_path / "daemon.pid"
    hook = tmp_path / "bin" / "daemonising-hook"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\nsetsid sh -c 'echo $$ > {daemon_pid}; exec sleep 120' &\necho started\nsleep 300\n")
    hook.chmod(0o755)
    state = MetadataState(cloud="aws", instance_action={"action": "terminate", "time": iso(FAR + 60)})
    try:
        with MetadataServer(state) as server:
            rig = make_rig(tmp_path, metadata_url=server.url, checkpoint_hook=str(hook), hook_timeout_seconds=20)
            started = time.monotonic()
            dog, _ = run_in_process(rig, start=FAR, max_ticks=5)
        assert time.monotonic() - started < 20, "the watchdog waited on a pipe the daemon holds"
        assert dog.done and rig.names() == ["sync", "shutdown"]
        assert "checkpoint-hook: did not finish within" in rig.log_text()
    finally:
        if daemon_pid.exists():
            with contextlib.suppress(OSError):
                os.kill(int(daemon_pid.read_text()), signal.SIGKILL)


def test_a_hook_cut_short_goes_with_everything_in_its_process_group(tmp_path: Path) -> None:
    child_pid = tmp_path / "child.pid"
    hook = tmp_path / "bin" / "hook-with-child"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\n(sleep 300 & echo $! > {child_pid}; wait) &\nsleep 300\n")
    hook.chmod(0o755)
    rig = make_rig(tmp_path, checkpoint_hook=str(hook), hook_timeout_seconds=10)
    dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 5 * MIN, max_ticks=3)
    assert dog.done and rig.names() == ["sync", "shutdown"]
    stat = Path(f"/proc/{int(child_pid.read_text())}/stat")
    assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"


def test_a_hook_that_exits_but_leaves_a_daemon_holding_its_output_does_not_block(tmp_path: Path) -> None:
    daemon_pid = tmp_path / "daemon.pid"
    hook = tmp_path / "bin" / "quick-hook-with-daemon"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\nsleep 60 &\necho $! > {daemon_pid}\necho saved\nexit 0\n")
    hook.chmod(0o755)
    rig = make_rig(tmp_path, checkpoint_hook=str(hook))
    try:
        started = time.monotonic()
        dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 5 * MIN, max_ticks=3)
        assert time.monotonic() - started < 15
        assert dog.done and rig.names() == ["sync", "shutdown"]
        assert re.search(r"checkpoint-hook: exited 0 after \d+ s: saved", rig.log_text())
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(daemon_pid.read_text()), signal.SIGKILL)


def test_a_hung_periodic_sync_is_killed_and_retried(tmp_path: Path) -> None:
    rig = make_rig(tmp_path, checkpoint_interval_minutes=5, sync_timeout_minutes=10)
    hang = tmp_path / "hang-once"
    hang.touch()
    sync = recorder(
        tmp_path / "bin" / "sync-hangs-once", "sync", rig.events,
        extra=f"import time\nif os.path.exists({str(hang)!r}):\n    os.remove({str(hang)!r})\n    time.sleep(600)",
    )
    rig.settings["sync_command"] = [str(sync), "{src}", "{dst}"]
    started = time.monotonic()
    dog, _ = run_in_process(rig, start=FAR, max_ticks=int(6 * MIN / 5))
    end = time.monotonic() + 15  # the first sync has started (and will hang) before the clock moves on
    while hang.exists() and time.monotonic() < end:
        time.sleep(0.02)
    dog.run(max_ticks=int(10 * MIN / 5))  # to +16 min: skipped at +10, killed and restarted at +15
    _wait_for_sync(dog)
    dog.run(max_ticks=int(5 * MIN / 5))  # to +21 min: the usual one at +20
    _wait_for_sync(dog)
    assert time.monotonic() - started < 45
    log = rig.log_text()
    # Started at +5 min, killed at +15 min (its timeout), retried at once, then every 5 minutes as usual.
    killed = re.findall(r"^(\S+) sync: periodic sync still running after 10 min: killed", log, flags=re.M)
    assert killed == [iso(FAR + 15 * MIN)]
    starts = re.findall(r"^(\S+) sync: periodic sync started", log, flags=re.M)
    assert starts[:3] == [iso(FAR + 5 * MIN), iso(FAR + 15 * MIN), iso(FAR + 20 * MIN)]
    assert "the previous periodic sync is still running; skipping this one" in log  # at +10 min
    assert log.count("periodic sync exited 0") >= 1 and not dog.done
    assert not hang.exists()


def test_a_failing_final_sync_is_retried_until_it_succeeds_within_the_window(tmp_path: Path) -> None:
    rig = make_rig(tmp_path)
    failures = tmp_path / "failures"
    failures.write_text("3")
    sync = recorder(
        tmp_path / "bin" / "sync-fails-thrice", "sync", rig.events,
        extra=f"left = int(open({str(failures)!r}).read())\nopen({str(failures)!r}, 'w').write(str(left - 1))\n"
        "if left > 0:\n    sys.exit(1)",
    )
    rig.settings["sync_command"] = [str(sync), "{src}", "{dst}"]
    dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 5 * MIN, max_ticks=3)
    assert dog.done
    assert rig.names() == ["checkpoint-hook", "sync", "shutdown"]  # the stand-in records only the attempt that worked
    log = rig.log_text()
    assert [int(n) for n in re.findall(r"final-sync: attempt (\d+) failed; retrying", log)] == [1, 2, 3]
    assert "final-sync: exited 0" in log
    assert re.search(r"^\S+ final-sync: attempt 3 failed; retrying in 20 s", log, flags=re.M)


def test_a_final_sync_that_always_fails_gives_up_when_the_window_closes_and_still_shuts_down(tmp_path: Path) -> None:
    rig = make_rig(tmp_path)
    sync = recorder(tmp_path / "bin" / "sync-fails", "sync", rig.events, exit_code=1)
    rig.settings["sync_command"] = [str(sync), "{src}", "{dst}"]
    dog, clock = run_in_process(rig, start=DEADLINE_EPOCH - 5 * MIN, max_ticks=3)
    assert dog.done and rig.names()[-1] == "shutdown"
    attempts = rig.names().count("sync")
    assert 5 <= attempts <= 20  # backoff 5, 10, 20, 30, 30 ... s over the 5-minute window
    assert "and the window closes: giving up" in rig.log_text()
    # The shutdown came before the deadline, with the reserve kept for it.
    assert clock.now() <= DEADLINE_EPOCH


def test_a_backwards_wall_clock_jump_does_not_stop_periodic_syncs(tmp_path: Path) -> None:
    rig = make_rig(tmp_path, checkpoint_interval_minutes=5)
    dog, clock = run_in_process(rig, start=FAR, max_ticks=int(6 * MIN / 5))  # one sync, at +5 min
    _wait_for_sync(dog)
    clock.jump(-24 * 3600)  # NTP steps the clock back a day
    for _ in range(4):  # +10, +15, +20, +25 min of monotonic time
        dog.run(max_ticks=int(5 * MIN / 5))
        _wait_for_sync(dog)
    assert len([e for e in events(rig.events) if e["name"] == "sync"]) == 5
    assert not dog.done


def test_a_forward_wall_clock_jump_past_the_deadline_ends_the_run_with_a_final_sync(tmp_path: Path) -> None:
    rig = make_rig(tmp_path)
    dog, clock = run_in_process(rig, start=FAR, max_ticks=3)
    assert not dog.done
    clock.jump(DEADLINE_EPOCH - clock.now())
    dog.run(max_ticks=3)
    assert dog.done and rig.names() == ["checkpoint-hook", "sync", "shutdown"]


def test_a_trickling_metadata_service_is_bounded_by_a_total_deadline(tmp_path: Path) -> None:
    # Every byte 50 ms apart: a per-read timeout of 0.25 s never fires, yet one answer would take seconds.
    state = MetadataState(cloud="aws", trickle=0.05, instance_action={"action": "terminate", "time": iso(FAR + 120)})
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, metadata_timeout_seconds=5, idle_minutes=10)
        started = time.monotonic()
        dog, _ = run_in_process(rig, start=FAR, max_ticks=6)
        took = time.monotonic() - started
    # Each request is cut at 5 virtual seconds = 0.25 s real; a few per tick, six ticks.
    assert took < 15
    assert "timed out after 0.25 s" in rig.log_text()
    assert not dog.done  # no notice could be read, and nothing was decided on a guess


def test_the_rebalance_checkpoint_runs_beside_the_loop_which_still_sees_the_interruption(tmp_path: Path) -> None:
    slow = tmp_path / "hook-is-slow"
    slow.touch()
    (tmp_path / "bin").mkdir()
    hook = recorder(
        tmp_path / "bin" / "slow-hook", "checkpoint-hook", tmp_path / "events.jsonl",
        extra=f"import time\nif os.path.exists({str(slow)!r}):\n    os.remove({str(slow)!r})\n    time.sleep(60)",
    )
    state = MetadataState(cloud="aws", rebalance={"noticeTime": iso(FAR)})
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, checkpoint_hook=str(hook), hook_timeout_seconds=600)
        started = time.monotonic()
        dog, clock = run_in_process(rig, start=FAR, max_ticks=3)
        assert time.monotonic() - started < 5, "the rebalance checkpoint blocked the loop"
        assert dog.rebalance_thread is not None and dog.rebalance_thread.is_alive()
        end = time.monotonic() + 15  # a loaded machine may take a moment to start the hook
        while slow.exists() and time.monotonic() < end:
            time.sleep(0.02)
        assert not slow.exists(), "the rebalance hook never started"
        state.instance_action = {"action": "terminate", "time": iso(clock.now() + 120)}
        dog.run(max_ticks=3)
    assert time.monotonic() - started < 35
    assert dog.done
    log = rig.log_text()
    assert log.index("spot-rebalance: rebalance recommendation") < log.index("spot-interruption:")
    assert "the rebalance checkpoint was cut short to make way for the final sequence" in log
    # The interruption's own sequence ran: hook (now quick), sync, shutdown.
    assert rig.names()[-3:] == ["checkpoint-hook", "sync", "shutdown"]
