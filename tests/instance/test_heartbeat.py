"""The watchdog's heartbeat (instance/heartbeat.py): heartbeat.json every few minutes, copied beside the
checkpoints, and the spend estimate that warns once at each budget threshold."""

from __future__ import annotations

import json
from pathlib import Path

from gpulease.core import vocabulary as v
from tests.support.instance import (
    DEADLINE_EPOCH,
    MetadataServer,
    MetadataState,
    deadline_tags,
    events,
    iso,
    make_rig,
    run_in_process,
)

MIN = 60.0
HOUR = 3600.0
BOOT = DEADLINE_EPOCH - 8 * HOUR


def _tags(hourly: str = "10", budget: str = "40") -> dict[str, str]:
    return {**deadline_tags(), v.TAG_MAX_HOURLY_USD: hourly, v.TAG_BUDGET_USD: budget}


def test_the_heartbeat_reports_gpu_checkpoints_deadline_and_spend_and_goes_to_the_bucket(tmp_path: Path) -> None:
    state = MetadataState(tags=_tags())
    # The copy stand-in is a shell script: quick to start on a loaded machine, where the virtual clock runs ahead.
    copies = tmp_path / "copies.txt"
    copier = tmp_path / "aws-cp"
    copier.write_text(f'#!/bin/sh\necho "$@" >> {copies}\n')
    copier.chmod(0o755)
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, boot_time=BOOT, poll_seconds=5, warn_hook=None,
                       budget_thresholds=[50, 80, 100],
                       control_upload_command=[str(copier), "s3", "cp", "{src}", "{dst}", "--region", "{region}"])
        (tmp_path / "gpu" / "utilization.csv").write_text("87, 18000, 23028\n")
        run_in_process(rig, start=BOOT + 1 * HOUR, max_ticks=int(12 * MIN / 5))
    beat = json.loads((Path(rig.settings["state_dir"]) / "heartbeat.json").read_text())
    assert beat["instanceId"] == "i-0123456789abcdef0" and beat["experiment"] == "exp1"
    assert beat["deadline"] == iso(DEADLINE_EPOCH) and beat["deadlineSource"]
    assert 7 * 60 - 15 <= beat["minutesLeft"] <= 7 * 60 - 9
    assert beat["gpus"] == [{"utilizationPercent": 87, "memoryUsedMib": 18000, "memoryTotalMib": 23028}]
    assert beat["gpuError"] is None
    assert beat["newestCheckpoint"]["path"] == "step-100.pt"
    spend = beat["spend"]
    assert spend["maxHourlyUsd"] == 10 and spend["budgetUsd"] == 40
    assert 1.1 <= spend["hours"] <= 1.25 and abs(spend["usdAtMost"] - 10 * spend["hours"]) <= 0.05
    assert spend["percent"] == round(100 * 10 * spend["hours"] / 40, 1) and spend["warned"] == []
    # Every 5 minutes (at 0, 5 and 10), not on every tick; each copied to the control_uri setting.
    calls = copies.read_text().splitlines()
    assert 2 <= len(calls) <= 3, calls
    assert all(call.split()[3] == "s3://bucket/_gpulease/ckpt/control/heartbeat.json" for call in calls)


def test_the_spend_estimate_warns_once_per_threshold_and_runs_the_warn_hook(tmp_path: Path) -> None:
    state = MetadataState(tags=_tags(hourly="10", budget="40"))  # 50% after 2 h, 80% after 3.2 h, 100% after 4 h
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, boot_time=BOOT, poll_seconds=60, heartbeat_minutes=10,
                       budget_thresholds=[50, 80, 100])
        run_in_process(rig, start=BOOT + 1.5 * HOUR, max_ticks=int(2.2 * HOUR / 60))  # to 3.7 h
        log = rig.log_text()
        assert log.count("budget-warning:") == 2
        assert "of its budget $40.00 or more" in log and "50% of its budget" in log and "80% of its budget" in log
        hooks = [e for e in events(rig.events) if e["name"] == "warn-hook"]
        assert [e["env_reason"] for e in hooks] == ["budget-50", "budget-80"]
        # A restarted watchdog (same state directory) does not warn again; the next threshold still comes.
        run_in_process(rig, start=BOOT + 3.7 * HOUR, max_ticks=int(0.5 * HOUR / 60))
    log = rig.log_text()
    assert log.count("budget-warning:") == 3 and "100% of its budget" in log


def test_without_the_price_tag_there_is_no_estimate_and_no_warning(tmp_path: Path) -> None:
    state = MetadataState(tags={**deadline_tags(), v.TAG_BUDGET_USD: "1"})
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, boot_time=BOOT, poll_seconds=60,
                       budget_thresholds=[50])
        run_in_process(rig, start=BOOT + 5 * HOUR, max_ticks=10)
    beat = json.loads((Path(rig.settings["state_dir"]) / "heartbeat.json").read_text())
    assert beat["spend"] is None and "budget-warning" not in rig.log_text()


def test_a_failing_nvidia_smi_is_reported_not_fatal(tmp_path: Path) -> None:
    rig = make_rig(tmp_path, poll_seconds=60)
    (tmp_path / "gpu" / "fail").touch()
    dog, _ = run_in_process(rig, start=BOOT + HOUR, max_ticks=3)
    beat = json.loads((Path(rig.settings["state_dir"]) / "heartbeat.json").read_text())
    assert beat["gpus"] == [] and beat["gpuError"].startswith("nvidia-smi exited 9")
    assert not dog.done


def test_on_alibaba_cloud_the_price_and_budget_come_through_the_ecs_api_when_metadata_lacks_tags(tmp_path: Path) -> None:
    from tests.support.ecs_api import EcsApi

    api = EcsApi()
    iid = "i-bp1heartbeat"
    api.instances[iid] = {"Tags": {v.TAG_EXPIRES_AT: iso(DEADLINE_EPOCH), v.TAG_MAX_HOURLY_USD: "20",
                                   v.TAG_BUDGET_USD: "40"}}
    state = MetadataState(cloud="alicloud", tags={}, instance_id=iid, termination_time=None)
    try:
        with MetadataServer(state) as server:
            rig = make_rig(tmp_path, metadata_url=server.url, cloud="alicloud", region="cn-hangzhou",
                           checkpoint_uri="oss://bucket/ckpt/",
                           control_uri="oss://bucket/_gpulease/ckpt/control/", deadline_api=True, ecs_endpoint=api.url,
                           boot_time=BOOT, poll_seconds=60, budget_thresholds=[50, 80])
            run_in_process(rig, start=BOOT + 1.2 * HOUR, max_ticks=20)  # 24 -> 26 USD of 40: 60-65%
    finally:
        api.close()
    assert api.bad_signatures == 0
    beat = json.loads((Path(rig.settings["state_dir"]) / "heartbeat.json").read_text())
    assert beat["spend"]["maxHourlyUsd"] == 20 and beat["spend"]["budgetUsd"] == 40
    log = rig.log_text()
    assert log.count("budget-warning:") == 1 and "50% of its budget $40.00 or more" in log
