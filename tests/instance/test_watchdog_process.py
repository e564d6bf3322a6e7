"""The shipped watchdog, taken out of rendered user-data and run as systemd would: a process, its settings file,
an accelerated clock, the loopback metadata service and recorded stand-ins."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from components.spec.experiment import ExperimentSpec
from components.userdata import render_user_data, settings_for, tools_bundle
from tests.instance.test_spot_recovery import fake_aws
from tests.support.instance import DEADLINE_EPOCH, MetadataServer, MetadataState, deadline_tags, events, iso, make_rig
from tests.support.specs import BASE_EXPERIMENT


def shipped_watchdog(tmp_path: Path) -> tuple[Path, dict]:
    """The watchdog and what it imports exactly as an AWS instance installs them (the tools bundle), and the
    settings exactly as its user-data writes them."""
    spec = ExperimentSpec.model_validate(BASE_EXPERIMENT)
    text = render_user_data(
        settings_for(
            spec,
            cloud="aws",
            region="us-east-1",
            stack="test",
            checkpoint_uri="s3://bucket/ckpt/",
            data_disk_id="vol-0123456789abcdef0",
            tools_bucket="gpulease-boot-test",
            nvidia_driver="preinstalled",
        )
    )
    written = {f["path"]: f["content"] for f in yaml.safe_load(text)["write_files"]}
    install = tmp_path / "opt"
    install.mkdir()
    for name, source in json.loads(tools_bundle())["files"].items():
        (install / name).write_text(source)
    return install / "watchdog.py", json.loads(written["/etc/gpulease/settings.json"])


def start(script: Path, settings: dict, tmp_path: Path, *, speed: float, clock_start: float) -> subprocess.Popen:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(settings))
    env = {"GPULEASE_SETTINGS": str(path), "GPULEASE_CLOCK_SPEED": str(speed), "GPULEASE_CLOCK_START": str(clock_start)}
    return subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def rig_settings(tmp_path: Path, shipped: dict, url: str) -> tuple[dict, object]:
    """The shipped settings, with only the stand-ins' paths and the test service swapped in."""
    rig = make_rig(tmp_path, metadata_url=url)
    swapped = {k: rig.settings[k] for k in (
        "metadata_url", "sync_command", "shutdown_command", "nvidia_smi", "checkpoint_hook", "mount_point",
        "busy_marker", "proc_root", "log_file", "exit_after_shutdown", "state_dir",
    )}
    return {**shipped, **swapped}, rig


def test_shipped_watchdog_enforces_the_deadline_on_an_accelerated_clock(tmp_path: Path) -> None:
    script, shipped = shipped_watchdog(tmp_path)
    with MetadataServer(MetadataState(cloud="aws", tags=deadline_tags())) as server:
        settings, rig = rig_settings(tmp_path, shipped, server.url)
        # Spot recovery is on for this spot experiment: the own request is cancelled first (an AWS CLI stand-in).
        assert settings["spot_recover"] is True
        settings["aws_command"] = str(fake_aws(tmp_path / "bin" / "aws-ec2", rig.events))
        # 200x: the two minutes before the final sync pass in well under a second.
        proc = start(script, settings, tmp_path, speed=200, clock_start=DEADLINE_EPOCH - 7 * 60)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    names = rig.names()
    # At 200x a CLI stand-in's real start-up is tens of virtual seconds: on a loaded machine a first try of the
    # cancel may run out of its bound and be retried (with the state reads that go with it). What must hold
    # whatever the timing: one shutdown, last, and only after the own request's cancel and a sync.
    assert names.count("shutdown") == 1 and names[-1] == "shutdown", names
    assert "aws-cancel-spot-instance-requests" in names and "sync" in names, names
    assert names.index("aws-cancel-spot-instance-requests") < names.index("shutdown")
    syncs = [e["argv"] for e in events(rig.events) if e["argv"][:2] == ["s3", "sync"]]
    assert syncs and syncs[-1] == ["s3", "sync", str(rig.checkpoints), "s3://bucket/ckpt/", "--region", "us-east-1"]
    (when,) = re.findall(r"^(\S+) deadline: ", out, flags=re.M)
    # On a real (accelerated) clock the tick lands within a poll interval of final_sync_minutes before the deadline.
    assert iso(DEADLINE_EPOCH - 5 * 60) <= when <= iso(DEADLINE_EPOCH - 5 * 60 + 60)
    assert "deadline-warning" in out  # the 15-minute warning was already due at start


def test_shipped_watchdog_acts_on_a_spot_notice_in_real_time(tmp_path: Path) -> None:
    script, shipped = shipped_watchdog(tmp_path)
    now = time.time()
    state = MetadataState(cloud="aws", instance_action={"action": "terminate", "time": iso(now + 120)},
                          tags=deadline_tags(now + 8 * 3600))
    with MetadataServer(state) as server:
        settings, rig = rig_settings(tmp_path, shipped, server.url)
        # A one-time request ends on the notice; a recovering one waits for the cloud's stop
        # (tests/instance/test_reclaim_journey.py plays that).
        settings["spot_recover"] = False
        started = time.monotonic()
        proc = start(script, settings, tmp_path, speed=1, clock_start=now)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert time.monotonic() - started < 20
    assert rig.names() == ["checkpoint-hook", "sync", "shutdown"]
    assert "spot-interruption: spot instance-action terminate" in out


def test_shipped_watchdog_syncs_once_more_when_systemd_stops_it(tmp_path: Path) -> None:
    script, shipped = shipped_watchdog(tmp_path)
    with MetadataServer(MetadataState(cloud="aws", tags=deadline_tags())) as server:
        settings, rig = rig_settings(tmp_path, shipped, server.url)
        proc = start(script, settings, tmp_path, speed=1, clock_start=DEADLINE_EPOCH - 3600)
        log = Path(settings["log_file"])
        for _ in range(200):
            if log.exists() and "start:" in log.read_text():
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert rig.names() == ["sync"]
    assert "stopping: the service is being stopped -> final sync" in out


def test_unreadable_settings_exit_with_a_message(tmp_path: Path) -> None:
    script, _ = shipped_watchdog(tmp_path)
    proc = start(script, {"cloud": "aws"}, tmp_path, speed=1, clock_start=DEADLINE_EPOCH)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "cannot read settings" in out and "'max_runtime_hours'" in out


def test_the_accelerated_clock_runs_at_its_speed_from_its_start() -> None:
    from instance.watchdog import Clock

    clock = Clock(speed=100, start=1_000.0)
    time.sleep(0.1)
    assert 1_005.0 <= clock.now() <= 1_060.0  # 0.1 s real is 10 s virtual, give or take the scheduler
    assert clock.real(200) == 2.0
    before = time.monotonic()
    clock.sleep(10)  # ten virtual seconds are a tenth of a real one
    assert time.monotonic() - before < 1.0
    assert abs(Clock().now() - time.time()) < 1.0
