"""A metadata service that fails, hangs or refuses never stops the watchdog: deadline and idle still hold."""

from __future__ import annotations

import re
import time
from pathlib import Path

from tests.support.instance import (
    DEADLINE_EPOCH,
    MetadataServer,
    MetadataState,
    iso,
    make_rig,
    run_in_process,
    set_gpus,
)

START = DEADLINE_EPOCH - 6 * 60


def test_metadata_errors_are_logged_once_and_the_deadline_still_holds(tmp_path: Path) -> None:
    state = MetadataState(cloud="aws", fail=True)
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url)
        dog, _ = run_in_process(rig, start=START)
    assert dog.done and rig.names() == ["warn-hook", "checkpoint-hook", "sync", "shutdown"]
    assert len(state.requests) >= 12  # it kept asking every tick
    log = rig.log_text()
    assert log.count("metadata-error") == 1
    assert "PUT /latest/api/token answered 500" in log


def test_a_hanging_metadata_service_times_out_and_the_deadline_still_holds(tmp_path: Path) -> None:
    state = MetadataState(cloud="aws", delay=1.0)
    with MetadataServer(state) as server:
        # Every poll waits out its timeout: polling every 30 s (the spec allows up to 60) keeps the six minutes
        # to the deadline at a dozen of them.
        rig = make_rig(tmp_path, metadata_url=server.url, metadata_timeout_seconds=2, poll_seconds=30)
        started = time.monotonic()
        dog, _ = run_in_process(rig, start=START)
    assert time.monotonic() - started < 15
    assert dog.done and rig.names()[-1] == "shutdown"
    assert re.search(r"metadata-error: PUT /latest/api/token: .*timed out", rig.log_text())


def test_a_refused_connection_does_not_stop_the_idle_shutdown(tmp_path: Path) -> None:
    rig = make_rig(tmp_path, metadata_url="http://127.0.0.1:9", idle_minutes=10)
    set_gpus(rig.gpu_state, util=0)
    start = DEADLINE_EPOCH - 5 * 3600
    dog, _ = run_in_process(rig, start=start)
    assert dog.done and rig.names() == ["sync", "shutdown"]
    log = rig.log_text()
    assert "metadata-error" in log and "refused" in log
    assert re.search(rf"^{iso(start + 600)} idle-shutdown: ", log, flags=re.M)


def test_a_notice_after_the_service_recovers_is_acted_on(tmp_path: Path) -> None:
    state = MetadataState(cloud="aws", fail_first=4, instance_action={"action": "terminate", "time": iso(START + 120)})
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, warn_hook=None)
        dog, _clock = run_in_process(rig, start=START - 3600, max_ticks=20)
    log = rig.log_text()
    assert log.index("metadata-error") < log.index("metadata-recovered") < log.index("spot-interruption")
    assert dog.done and rig.names() == ["checkpoint-hook", "sync", "shutdown"]
