"""When the setup of this boot ends, for the idle rule: a bootstrap that could not read the instance id writes
this boot's records, and the watchdog that claims the state later keeps them; a bootstrap that died early without
reporting ends the wait at once (its pid is gone); the wait is bounded from the bootstrap unit's own start."""

from __future__ import annotations

import json
import os
from pathlib import Path

from instance import bounds, idle_rule
from instance import instance_state as st

BOOT = "btime-1000"
SETTINGS = {"idle_gpu_percent": 5, "idle_minutes": 30, "idle_after_setup": True}


def test_an_unknown_id_bootstrap_then_the_watchdog_keeps_this_boots_records(tmp_path: Path) -> None:
    state = str(tmp_path)
    st.write_state_file(os.path.join(state, st.IDENTITY_FILE),
                        {"instanceId": "i-old", "boots": [{"boot": "btime-1", "bootTime": 1.0, "lastAlive": 2.0}]})
    st.write_state_file(os.path.join(state, "watchdog-state.json"), {"boot": "btime-1", "deadline": 5.0})
    # The bootstrap: the metadata service did not answer, nothing is claimed, and it writes its records.
    assert st.claim(state, None, BOOT, 1000.0, 1001.0).kind == "unknown-id"
    st.mark_progress(state, BOOT, "bootstrap", 1500.0)
    st.write_state_file(os.path.join(state, "ready.json"), {"boot": BOOT, "ready": True})
    # The watchdog reads the id: the state was another instance's and is moved aside, but not this boot's records.
    found = st.claim(state, "i-new", BOOT, 1000.0, 1600.0)
    assert found.kind == "first-boot" and found.moved == ["watchdog-state.json"]
    assert st.setup_finished(state, BOOT, needs_verify=False)
    assert json.loads((tmp_path / "ready.json").read_text())["boot"] == BOOT
    assert (tmp_path / st.PREVIOUS_DIR / "i-old" / "watchdog-state.json").exists()


class Clock:
    def __init__(self) -> None:
        self.wall = 10_000.0

    def now(self) -> float:
        return self.wall


def _rule(tmp_path: Path, clock: Clock, running: set[int], settings: dict | None = None) -> idle_rule.IdleRule:
    state = str(tmp_path)
    s = {**SETTINGS, **(settings or {})}
    return idle_rule.IdleRule(s, 0.0, lambda: st.setup_finished(state, BOOT, bool(s.get("verify"))),
                              lambda: st.setup_progress(state, BOOT), clock.now, lambda pid: pid in running)


def test_a_bootstrap_that_died_early_ends_the_wait_and_idle_counts_from_then(tmp_path: Path) -> None:
    clock, running = Clock(), {4242}
    st.mark_progress(str(tmp_path), BOOT, "bootstrap_started", clock.wall, bootstrap_pid=4242)
    rule = _rule(tmp_path, clock, running)
    assert [v.event for v in rule.observe(60.0, [0.0], None, None)] == ["setup-running"]
    running.clear()  # the bootstrap crashed: no "bootstrap" mark, its process is gone
    found = rule.observe(120.0, [0.0], None, None)
    assert [v.event for v in found] == ["setup-ended", "idle"]
    assert found[0].reason == "the bootstrap (pid 4242) ended without reporting: idle time counts from now"
    assert rule.observe(120.0 + 30 * 60, [0.0], None, None)[-1].shutdown  # 30 min after, not 11 h


def test_the_wait_is_bounded_from_the_bootstrap_units_own_start(tmp_path: Path) -> None:
    clock, running = Clock(), {4242}
    started = clock.wall - bounds.value("idle_setup_wait", SETTINGS) + 600  # it started long before the watchdog
    st.mark_progress(str(tmp_path), BOOT, "bootstrap_started", started, bootstrap_pid=4242)
    rule = _rule(tmp_path, clock, running)
    assert [v.event for v in rule.observe(60.0, [0.0], None, None)] == ["setup-running"]
    clock.wall += 600
    assert [v.event for v in rule.observe(660.0, [0.0], None, None)] == ["setup-overdue", "idle"]


def test_after_the_bootstrap_the_verification_is_waited_for_the_run_units_bound(tmp_path: Path) -> None:
    clock, running = Clock(), {4242}
    settings = {"verify": {"max_minutes": 20}}
    st.mark_progress(str(tmp_path), BOOT, "bootstrap_started", clock.wall, bootstrap_pid=4242)
    st.mark_progress(str(tmp_path), BOOT, "bootstrap", clock.wall + 60)
    running.clear()  # ended, and reported: not "died"
    rule = _rule(tmp_path, clock, running, settings)
    assert [v.event for v in rule.observe(60.0, [0.0], None, None)] == ["setup-running"]
    clock.wall += 60 + bounds.value("run_unit", {**SETTINGS, **settings})
    assert [v.event for v in rule.observe(120.0, [0.0], None, None)] == ["setup-overdue", "idle"]


def test_a_reused_pid_is_not_the_bootstrap(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    (proc / "77").mkdir(parents=True)
    (proc / "77" / "cmdline").write_bytes(b"/usr/bin/python3\0/opt/gpulease/instance_setup.py\0")
    (proc / "78").mkdir()
    (proc / "78" / "cmdline").write_bytes(b"sleep\x00100\x00")
    assert idle_rule.process_running(str(proc), 77)
    assert not idle_rule.process_running(str(proc), 78) and not idle_rule.process_running(str(proc), 79)
