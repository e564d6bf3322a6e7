"""The heartbeat's disks and starved-GPU flag (instance/disk_space.py, instance/starved_rule.py), and a state file
whose budget warnings are not a list."""

from __future__ import annotations

import json
import os
from pathlib import Path

from instance import disk_space, starved_rule
from tests.support.instance import DEADLINE_EPOCH, events, iso, make_rig, run_in_process

MIN = 60.0


def _beat(rig) -> dict:
    return json.loads((Path(rig.settings["state_dir"]) / "heartbeat.json").read_text())


def test_the_heartbeat_lists_the_data_and_root_disks(tmp_path: Path) -> None:
    rig = make_rig(tmp_path, poll_seconds=60, market="on-demand", warn_hook=None)
    run_in_process(rig, start=DEADLINE_EPOCH - 5 * 3600, max_ticks=2)
    disks = _beat(rig)["disks"]
    assert [d["mount"] for d in disks] == [rig.settings["mount_point"], "/"]
    for d in disks:
        fs = os.statvfs(d["mount"])
        assert d["totalBytes"] == fs.f_blocks * fs.f_frsize and 0 <= d["freeBytes"] <= d["totalBytes"]
        assert d["freePercent"] == round(100 * d["freeBytes"] / d["totalBytes"], 1)
        assert set(d) == {"mount", "freeBytes", "totalBytes", "freePercent"}


def test_a_checkpoint_that_would_fill_the_disk_warns_once_through_the_warn_hook(tmp_path: Path) -> None:
    rig = make_rig(tmp_path, poll_seconds=60, market="on-demand", heartbeat_minutes=1)
    rig.settings["disk_mounts"] = [rig.settings["mount_point"]]
    free = os.statvfs(rig.settings["mount_point"]).f_bavail * os.statvfs(rig.settings["mount_point"]).f_frsize
    # A sparse checkpoint as large as the free space: the next save may not fit. (Not just over half of it: other
    # processes change the shared disk's free space while the test runs.)
    with open(rig.checkpoints / "step-200.pt", "wb") as fh:
        fh.truncate(free)
    run_in_process(rig, start=DEADLINE_EPOCH - 5 * 3600, max_ticks=4)
    hooks = [e for e in events(rig.events) if e["name"] == "warn-hook"]
    assert [e["env_reason"] for e in hooks] == ["disk-space"]  # once, not at every beat
    assert "disk-warning: " in rig.log_text() and "less than 2 x the newest checkpoint" in rig.log_text()


def test_the_disk_warning_thresholds() -> None:
    watch = disk_space.DiskWatch({"mount_point": "/data", "disk_warn_free_percent": 10})
    assert watch._low("/", 5 * 2**30, 100 * 2**30, None) == "/ has 5.0 GiB free (5.0%), below 10%"
    assert watch._low("/data", 50 * 2**30, 100 * 2**30, 30 * 2**30) is not None
    assert watch._low("/data", 50 * 2**30, 100 * 2**30, 20 * 2**30) is None


def test_a_starved_gpu_is_flagged_after_its_window_and_an_idle_one_is_not() -> None:
    rule = starved_rule.StarvedRule({"idle_gpu_percent": 5, "starved_gpu_percent": 40, "starved_minutes": 30})
    t0 = DEADLINE_EPOCH
    for minute in range(30):
        assert rule.observe(minute * MIN, t0 + minute * MIN, [20.0, 30.0]) is None
    assert rule.observe(30 * MIN, t0 + 30 * MIN, [20.0, 30.0]) == {
        "since": iso(t0), "meanUtilizationPercent": 25.0, "thresholdPercent": 40.0}
    assert rule.observe(31 * MIN, t0 + 31 * MIN, [90.0, 95.0]) is None  # busy again: the episode ends
    idle = starved_rule.StarvedRule({"idle_gpu_percent": 5})
    for minute in range(40):
        assert idle.observe(minute * MIN, t0 + minute * MIN, [1.0]) is None  # idle is not starved
    assert starved_rule.StarvedRule({"idle_source": "cpu"}).observe(0, t0, [20.0]) is None


def test_the_heartbeat_carries_the_starved_flag(tmp_path: Path) -> None:
    rig = make_rig(tmp_path, poll_seconds=60, market="on-demand", heartbeat_minutes=1, starved_minutes=10)
    (rig.gpu_state / "utilization.csv").write_text("20, 9000, 23028\n")
    start = DEADLINE_EPOCH - 5 * 3600
    run_in_process(rig, start=start, max_ticks=12)
    assert _beat(rig)["gpuStarved"] == {"since": iso(start), "meanUtilizationPercent": 20.0, "thresholdPercent": 40.0}


def test_budget_warned_that_is_not_a_list_reads_as_none_warned(tmp_path: Path) -> None:
    rig = make_rig(tmp_path, poll_seconds=60, market="on-demand")
    state = Path(rig.settings["state_dir"])
    state.mkdir()
    (state / "watchdog-state.json").write_text(json.dumps({"first_boot": DEADLINE_EPOCH - 8 * 3600,
                                                           "budget_warned": 50}))
    dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 5 * 3600, max_ticks=2)
    assert dog.heartbeat.warned == []
    assert "tick failed" not in rig.log_text()


def test_a_nan_or_infinite_budget_tag_is_no_budget() -> None:
    from instance import budget_rule

    for bad in ("nan", "NaN", "inf", "-inf", "-1", "1e999", "ten", True, None):
        assert budget_rule.tag_number(bad) is None, bad
    assert budget_rule.tag_number("40.5") == 40.5
