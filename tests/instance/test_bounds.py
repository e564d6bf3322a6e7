"""Every time bound on the instance in one table (instance/bounds.py): each outer bound covers the inner ones, the
systemd units take their timeouts from it, and the tools wait what the table says."""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from unittest.mock import patch

from components.userdata import cloudinit, decode_user_data
from components.userdata.cloudinit import WATCHDOG_UNIT_TEXT, unit_bound_settings
from instance import bounds, instance_setup, run_job, staging, sync_rule, watchdog, watchdog_defaults
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
    assert bounds.value("idle_sync_window") == watchdog_defaults.IDLE_SYNC_WINDOW_SECONDS
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


# -- the bootstrap's calls, counted from its code --------------------------------------------------------------

SETUP = Path(instance_setup.__file__)
NOT_A_STEP = {
    "device_poll": "the pause of the wait for the disk, inside device_wait",
    "apt_lock": "apt's own wait for the dpkg lock, inside apt_update and apt_install",
    "fstab_device_timeout": "an option of the fstab line, waited by systemd at a later boot, not by the bootstrap",
}
COMPUTED = {"apt_get": ("apt_update", "apt_install")}
"""A function whose command's bound is computed (what is left of its caller's deadline), and the rows of the
callers' deadlines: apt_get runs within apt-get update's and apt-get install's."""


def _literal_bound(node: ast.AST) -> str | None:
    """``X`` of ``bounds.value("X")`` / ``bounds.systemd_seconds("X")``."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "bounds" and node.args and isinstance(node.args[0], ast.Constant)):
        return str(node.args[0].value)
    return None


def bootstrap_calls(source: str) -> Counter[str]:
    """How often each bound is waited from the bootstrap's ``main``, through the module's own functions (a call
    site is one wait; a function called from two places waits twice): ``run(...)`` without a timeout waits
    ``setup_command``, with a computed one ``computed:<function>``; every ``bounds.value("X")`` is one wait of X."""
    tree = ast.parse(source)
    functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    done: dict[str, Counter[str]] = {}

    def count(name: str) -> Counter[str]:
        if name in done:
            return done[name]
        done[name] = found = Counter()
        bound_args: set[int] = set()
        calls = [n for stmt in functions[name].body for n in ast.walk(stmt) if isinstance(n, ast.Call)]
        for call in calls:
            if isinstance(call.func, ast.Name) and call.func.id == "run":
                timeout = call.args[1] if len(call.args) > 1 else next(
                    (k.value for k in call.keywords if k.arg == "timeout"), None)
                literal = _literal_bound(timeout) if timeout is not None else None
                if timeout is not None:
                    bound_args.add(id(timeout))
                found["setup_command" if timeout is None else literal or f"computed:{name}"] += 1
        for call in calls:
            literal = _literal_bound(call)
            if literal and id(call) not in bound_args:
                found[literal] += 1
            elif isinstance(call.func, ast.Name) and call.func.id in functions and call.func.id != "run":
                found.update(count(call.func.id))
        return found

    return count("main")


def unit_leaves(name: str) -> Counter[str]:
    """What runs inside a composed row, down to the rows that hold no others, each with its count."""
    found: Counter[str] = Counter()
    for inner, times in bounds.TABLE[name].parts():
        inside = unit_leaves(inner) if bounds.TABLE[inner].inner else Counter({inner: 1})
        found.update({leaf: times * n for leaf, n in inside.items()})
    return found


def uncounted(source: str) -> list[str]:
    """The bootstrap's waits that the bootstrap unit's row does not count (as often as the code can run them)."""
    leaves = unit_leaves("bootstrap_unit")
    wrong = []
    for bound, times in sorted(bootstrap_calls(source).items()):
        if bound in NOT_A_STEP:
            continue
        if bound.startswith("computed:"):
            rows = COMPUTED.get(bound.partition(":")[2], ())
            if times > len(rows) or any(leaves[row] < 1 for row in rows):
                wrong.append(f"{bound} runs {times} x, covered by {rows or 'no row'}")
        elif leaves[bound] < times:
            wrong.append(f"{bound} runs {times} x in the bootstrap, the unit counts it {leaves[bound]} x")
    return wrong


def test_the_bootstrap_unit_counts_every_call_the_bootstrap_makes_as_often_as_it_makes_it() -> None:
    source = SETUP.read_text()
    calls = bootstrap_calls(source)
    assert calls["nvidia_smi_setup"] == 4 and calls["setup_command"] == 8 and calls["bucket_copy"] == 2
    assert calls["cli_install"] == 2  # before staging, and again before the bucket check
    assert uncounted(source) == []
    # One more command without a bound of its own in a disk step is one the unit does not count.
    extra = source.replace('    root = run(["findmnt", "-nro", "SOURCE", "/"]).stdout.strip()\n',
                           '    root = run(["findmnt", "-nro", "SOURCE", "/"]).stdout.strip()\n    run(["sync"])\n')
    assert extra != source
    assert uncounted(extra) == ["setup_command runs 9 x in the bootstrap, the unit counts it 8 x"]


def test_each_composed_bound_is_the_written_value_and_covers_the_sum_of_what_runs_inside_it() -> None:
    """The written value is what systemd is given at the defaults, and it covers (not equals by construction) the
    sum of its inner rows, each as often as it runs, plus its margin."""
    assert bounds.systemd_seconds("bootstrap_unit") == 40260
    leaves = unit_leaves("bootstrap_unit")
    summed = sum(times * bounds.value(leaf) for leaf, times in leaves.items())
    assert summed == 39660 and bounds.value("bootstrap_unit") >= summed + 600
    assert leaves["nvidia_smi_setup"] == 4 and leaves["setup_command"] == 8 and leaves["torch_probe"] == 3
    assert bounds.value("run_unit") == 3960 and bounds.value("idle_setup_wait") == 40260 + 3960
    shrunk = dict(bounds.TABLE)
    shrunk["bootstrap_unit"] = replace(bounds.TABLE["bootstrap_unit"], seconds=40000)
    with patch.dict(bounds.TABLE, shrunk):
        assert bounds.outer_covers_inner() == [
            "bootstrap_unit (40000 s) < fetch_tools + device_wait + mkfs + udev_settle + mount + apt_update + "
            "apt_install + modprobe + 4 x nvidia_smi_setup + 2 x cli_install + secret_read + stage + torch_probes + "
            "bucket_check + peer_wait + publish + 8 x setup_command + 600 margin (40260 s)"]
    # A setting lengthens the unit by as much as it lengthens what runs inside.
    assert bounds.value("bootstrap_unit", {"staging_deadline_seconds": 10 * HOUR}) == 40260 + 2 * HOUR
