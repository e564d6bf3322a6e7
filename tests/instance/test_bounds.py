"""Every time bound on the instance in one table (instance/bounds.py): each outer bound covers the inner ones, the
systemd units take their timeouts from it, and the tools wait what the table says."""

from __future__ import annotations

import re
from types import SimpleNamespace

from components.userdata import cloudinit, decode_user_data
from components.userdata.cloudinit import WATCHDOG_UNIT_TEXT, unit_bound_settings
from instance import bounds, instance_setup, run_job, staging, sync_rule, watchdog
from tests.support.specs import experiment, render_experiment
from tests.support.userdata import cloud_config, files

HOUR = 3600


def _unit_timeout(text: str, key: str = "TimeoutStartSec") -> int:
    found = re.search(rf"^{key}=(\d+)$", text, re.M)
    assert found, text
    return int(found.group(1))


def _rendered_units(spec: dict) -> dict[str, str]:
    r = render_experiment(spec)
    assert r.error is None, r.error
    found = files(cloud_config(decode_user_data(r.one("aws:ec2/instance:Instance").inputs["userDataBase64"])))
    return {path: f["content"] for path, f in found.items() if path.startswith("/etc/systemd/system/")}


def test_every_outer_bound_covers_its_inner_ones_at_the_defaults_and_for_long_stages() -> None:
    assert bounds.outer_covers_inner() == []
    long = {"staging_deadline_seconds": 20 * HOUR, "verify": {"max_minutes": 240}, "device_wait_seconds": 3600}
    assert bounds.outer_covers_inner(long) == []
    assert bounds.value("bootstrap_unit", long) >= bounds.value("bootstrap_unit") + 20 * HOUR - bounds.STAGE_DEFAULT


def test_the_bootstrap_unit_covers_what_the_bootstrap_waits_for_by_its_own_defaults() -> None:
    """Summed here from the tools' own defaults, not from the table: a step left out of the table fails this."""
    d = instance_setup.DEFAULTS
    waits = (d["device_wait_seconds"] + 1800 + 60 + 300  # the disk: wait, mkfs, udev, mount
             + d["apt_update_timeout_seconds"] + d["apt_install_timeout_seconds"]  # the driver
             + staging.DEFAULT_STAGE_DEADLINE  # the whole stage's own deadline (instance/staging.py)
             + 300 + 120 + 240)  # torch probe, bucket check, the two copies to the bucket
    unit = _rendered_units(experiment())["/etc/systemd/system/gpulease-bootstrap.service"]
    assert _unit_timeout(unit) >= waits + bounds.value("fetch_tools")
    assert _unit_timeout(unit) != 3600  # the old fixed hour, which killed every stage longer than that


def test_the_bootstrap_unit_follows_the_stage_deadline_setting() -> None:
    settings = SimpleNamespace(staging_deadline_seconds=30 * HOUR, verify=SimpleNamespace(max_minutes=90))
    found = unit_bound_settings(settings)  # type: ignore[arg-type]
    assert found == {"staging_deadline_seconds": 30 * HOUR, "verify": {"max_minutes": 90}}
    assert bounds.systemd_seconds("bootstrap_unit", found) >= 30 * HOUR + bounds.value("device_wait")
    assert bounds.systemd_seconds("run_unit", found) >= 90 * 60 + bounds.value("tmux_install")


def test_the_run_unit_covers_the_verification_and_starts_after_a_failed_bootstrap() -> None:
    units = _rendered_units(experiment(verify={"command": "python t.py", "maxMinutes": 45},
                                       job={"command": "python train.py"}))
    run = units["/etc/systemd/system/gpulease-run.service"]
    assert _unit_timeout(run) >= 45 * 60 + run_job.DEFAULTS["tmux_install_timeout_seconds"]
    assert "Requires=" not in run and "Wants=network-online.target gpulease-bootstrap.service" in run


def test_the_watchdog_unit_lets_the_last_sync_finish() -> None:
    # On SIGTERM: the power-off check and the own spot request's cancel (spot recovery, AWS), then the last sync.
    assert bounds.value("watchdog_stop") == bounds.value("final_sync_on_stop") + bounds.value("system_jobs_query") \
        + bounds.value("spot_cancel_on_stop") + 10
    assert _unit_timeout(WATCHDOG_UNIT_TEXT, "TimeoutStopSec") >= bounds.value("watchdog_stop")


def test_the_tools_wait_what_the_table_says() -> None:
    d = instance_setup.DEFAULTS
    for name, setting in (("device_wait", "device_wait_seconds"), ("apt_update", "apt_update_timeout_seconds"),
                          ("apt_install", "apt_install_timeout_seconds"), ("metadata_read", "metadata_timeout_seconds")):
        assert bounds.TABLE[name].seconds == d[setting], name
    assert bounds.TABLE["tmux_install"].seconds == run_job.DEFAULTS["tmux_install_timeout_seconds"]
    assert bounds.TABLE["hook"].seconds == watchdog.DEFAULTS["hook_timeout_seconds"]
    assert bounds.TABLE["gpu_grace"].seconds == 60 * watchdog.DEFAULTS["gpu_grace_minutes"]
    assert bounds.value("idle_sync_window") == watchdog.IDLE_SYNC_WINDOW_SECONDS
    schedule = sync_rule.SyncSchedule({"checkpoint_interval_minutes": 1, "checkpoint_uri": "s3://b/"}, 0.0)
    assert schedule.timeout == bounds.value("sync_min")
    assert cloudinit.SETUP_UNIT_TEXT.count("{timeout}") == 1


def test_a_bound_from_the_settings_must_be_a_finite_positive_number() -> None:
    for bad in (True, -5, 0, float("nan"), float("inf"), 1e300, "3600"):
        assert bounds.value("stage", {"staging_deadline_seconds": bad}) == bounds.STAGE_DEFAULT, bad


def test_the_job_agent_and_the_spot_notice_fan_out_fit_their_outer_bounds() -> None:
    from instance import cluster
    # The agent's own wait for its job on SIGTERM, then a SIGKILL and the report, within the unit's stop timeout.
    assert bounds.value("job_stop_wait") + bounds.value("kill_reap") < bounds.value("job_agent_stop")
    # A notice's fan-out to every peer (all at once, each tried NOTICE_ATTEMPTS times) leaves the shortest notice
    # most of its window for this node's own checkpoint.
    fan_out = cluster.NOTICE_ATTEMPTS * (cluster.NOTICE_CONNECT_SECONDS + bounds.value("notice_pause")) \
        + bounds.value("thread_join_slack")
    assert fan_out == 3 * (2 + 0.5) + 1 < bounds.value("notice_minimum_aws") / 10
    # The peers' wait is part of the bootstrap, which the unit's start timeout covers.
    assert bounds.value("peer_wait") == cluster.PEER_WAIT_SECONDS
    assert "peer_wait" in bounds.TABLE["bootstrap_unit"].inner
