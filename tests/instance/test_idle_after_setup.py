"""Idle time starts when the bootstrap (and the verification) finish on this boot, not at boot
(instance/idle_rule.py): the driver install and a long stage keep the GPU at 0 % on purpose."""

from __future__ import annotations

import re
from pathlib import Path

from instance import bounds
from instance import instance_state as st
from tests.support.instance import (
    DEADLINE_EPOCH,
    MetadataServer,
    MetadataState,
    iso,
    make_rig,
    run_in_process,
    set_gpus,
)

MIN = 60.0
FAR = DEADLINE_EPOCH - 10 * 3600
BOOT_KEY = f"btime-{FAR:.0f}"
TICK = 60  # one poll a minute: hours of watchdog in a second


def _times(log: str, event: str) -> list[str]:
    return re.findall(rf"^(\S+) {re.escape(event)}:", log, re.M)


def _rig(tmp_path: Path, url: str, **overrides: object):
    rig = make_rig(tmp_path, metadata_url=url, **{"boot_time": FAR, "idle_minutes": 30, "idle_after_setup": True,
                                                 "poll_seconds": 60, "market": "on-demand", **overrides})
    set_gpus(rig.gpu_state, util=0)
    return rig


def test_a_long_bootstrap_at_zero_percent_gpu_is_not_idle_and_idle_counts_from_its_end(tmp_path: Path) -> None:
    with MetadataServer(MetadataState()) as server:
        rig = _rig(tmp_path, server.url)
        # 90 minutes of "driver install and staging" at 0 % GPU: three times idleMinutes, and no shutdown.
        dog, _ = run_in_process(rig, start=FAR, max_ticks=int(90 * MIN / TICK))
        assert not dog.done and "shutdown" not in rig.names()
        assert "setup-running: the bootstrap or the verification is still running" in rig.log_text()
        st.mark_progress(rig.settings["state_dir"], BOOT_KEY, "bootstrap", FAR + 90 * MIN)
        dog.run(max_ticks=int(40 * MIN / TICK))
    assert dog.done and rig.names() == ["sync", "shutdown"]
    # 30 idle minutes counted from the first look after the bootstrap reported (FAR + 90 min).
    assert _times(rig.log_text(), "idle-shutdown") == [iso(FAR + 120 * MIN)]


def test_with_a_verification_idle_waits_for_it_too(tmp_path: Path) -> None:
    with MetadataServer(MetadataState()) as server:
        rig = _rig(tmp_path, server.url, verify={"command": "true", "max_minutes": 20})
        dog, _ = run_in_process(rig, start=FAR, max_ticks=1)  # the watchdog claims the state folder first
        st.mark_progress(rig.settings["state_dir"], BOOT_KEY, "bootstrap", FAR)
        dog.run(max_ticks=int(45 * MIN / TICK) - 1)
        assert not dog.done
        st.mark_progress(rig.settings["state_dir"], BOOT_KEY, "verify", FAR + 45 * MIN)
        dog.run(max_ticks=int(35 * MIN / TICK))
    assert dog.done and _times(rig.log_text(), "idle-shutdown") == [iso(FAR + 75 * MIN)]


def test_a_bootstrap_that_never_reports_does_not_keep_the_instance_alive(tmp_path: Path) -> None:
    with MetadataServer(MetadataState()) as server:
        rig = _rig(tmp_path, server.url, idle_minutes=10, device_wait_seconds=60, apt_update_timeout_seconds=60,
                   apt_install_timeout_seconds=60, staging_deadline_seconds=60, peer_wait_seconds=60)
        wait = bounds.value("idle_setup_wait", rig.settings)
        dog, _ = run_in_process(rig, start=FAR, max_ticks=int((wait + 15 * MIN) / TICK))
    assert dog.done
    # It never recorded its start either: the bound is the bootstrap's own, from the boot (FAR), shorter than wait.
    own = bounds.value("bootstrap_unit", rig.settings)
    assert own < wait
    assert _times(rig.log_text(), "setup-overdue") == [iso(FAR + own)]
    assert _times(rig.log_text(), "idle-shutdown") == [iso(FAR + own + 10 * MIN)]


def test_a_progress_mark_of_an_earlier_boot_does_not_count(tmp_path: Path) -> None:
    with MetadataServer(MetadataState()) as server:
        rig = _rig(tmp_path, server.url, idle_minutes=10)
        dog, _ = run_in_process(rig, start=FAR, max_ticks=1)
        st.mark_progress(rig.settings["state_dir"], "btime-1", "bootstrap", FAR - 3600)
        dog.run(max_ticks=int(20 * MIN / TICK))
    assert not dog.done


def test_a_bootstrap_that_never_records_its_start_starts_the_idle_clock_at_its_own_bound_from_boot(
        tmp_path: Path) -> None:
    # The watchdog came up an hour after the boot (restarted); no bootstrap ever wrote boot-progress.json.
    with MetadataServer(MetadataState()) as server:
        rig = _rig(tmp_path, server.url, idle_minutes=10, staging_deadline_seconds=2 * 3600)
        own = bounds.value("bootstrap_unit", rig.settings)
        later = 3600
        assert later < own < 6 * 3600  # before the deadline (FAR + 10 h); the watchdog's start would give 1 h + wait
        dog, _ = run_in_process(rig, start=FAR + later, max_ticks=int((own - later + 15 * MIN) / TICK))
    assert dog.done
    overdue = _times(rig.log_text(), "setup-overdue")
    assert overdue == [iso(FAR + own)], overdue
    assert f"no bootstrap recorded its start within the bootstrap's own bound ({own / 60:.0f} min after the boot)" \
        in rig.log_text()
    assert _times(rig.log_text(), "idle-shutdown") == [iso(FAR + own + 10 * MIN)]
