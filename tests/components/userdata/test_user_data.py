"""User-data as each cloud receives it: the settings equal the spec, the tools and units that run them, the size.

The AWS case renders a real spec through the program under mocks and decodes the instance's user data exactly
as cloud-init would (base64, then gzip when compressed)."""

from __future__ import annotations

import ast
import base64
import gzip
import hashlib
import json
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from components import userdata
from components.spec.experiment import ExperimentSpec
from components.userdata import (
    BootstrapSettings,
    render_user_data,
    render_user_data_base64,
    settings_for,
)
from tests.support.paths import ROOT
from tests.support.specs import experiment, render_experiment
from tests.support.userdata import INSTANCE, SPEC_OVERRIDES, cloud_config, decode, files

VOLUME = "aws:ebs/volume:Volume"
BUCKET = "aws:s3/bucket:Bucket"
BUCKET_OBJECT = "aws:s3/bucketObjectv2:BucketObjectv2"
DEADLINE = "2026-12-01T16:00:00Z"

@pytest.fixture(scope="module")
def aws_render():
    r = render_experiment(experiment(**SPEC_OVERRIDES))
    assert r.error is None, r.error
    return r


@pytest.fixture(scope="module")
def aws_text(aws_render) -> str:
    instance = aws_render.one(INSTANCE)
    assert "userData" not in instance.inputs or not instance.inputs["userData"]
    return decode(instance.inputs["userDataBase64"])


def test_aws_settings_equal_the_spec_and_the_created_resources(aws_render, aws_text: str) -> None:
    written = files(cloud_config(aws_text))
    settings = json.loads(written[userdata.SETTINGS_PATH]["content"])
    bucket = aws_render.one(BUCKET).inputs["bucket"]
    assert settings == {
        "cloud": "aws",
        "region": "us-east-1",
        "stack": "test",
        "experiment": "exp1",
        "market": "spot",
        "max_runtime_hours": 8.0,
        "deadline_tag": "gpulease:expires-at",
        "idle_minutes": 45,
        "idle_gpu_percent": 7,
        "idle_after_setup": True,
        "warn_minutes": 20,
        "warn_hook": "wall 'deadline in 20 minutes'",
        "final_sync_minutes": 4,
        "checkpoint_uri": f"s3://{bucket}/ckpt/",
        "checkpoint_interval_minutes": 10,
        "checkpoint_hook": "python /data/save.py",
        "checkpoint_signal": "SIGUSR1",
        "checkpoint_process": "train.py",
        "hook_timeout_seconds": 90,
        "busy_marker": "/data/.busy",
        "busy_marker_max_age_minutes": 120,
        "on_rebalance": "shutdown",
        "spot_recover": True,  # spot with checkpoints recovers by default: the cloud stops and restarts it
        "poll_seconds": 10,
        "data_disk_id": aws_render.one(VOLUME).id,
        "data_owner": "ubuntu",
        "mount_point": "/data",
        "metadata_url": "http://169.254.169.254",
        "sync_command": ["aws", "s3", "sync", "{src}", "{dst}", "--region", "{region}", "--no-progress", "--only-show-errors"],
        "bucket_check_command": ["aws", "s3", "ls", "{dst}", "--region", "{region}"],
        "ready_upload_command": [
            "aws", "s3", "cp", "{file}", "{dst}ready.json", "--region", "{region}", "--only-show-errors"
        ],
        # The ready record a bake waits for, published by every stack with a bucket (turning image.bake on must not
        # change the user-data of the instance it images).
        "ready_record_command": [
            "aws", "s3", "cp", "{file}", "{dst}{instance}.json", "--region", "{region}", "--only-show-errors",
        ],
        # At the bucket root, outside the checkpoint prefix its lifecycle rule expires (image_bake.record_folder).
        "ready_record_uri": f"s3://{bucket}/_gpulease/ckpt/ready/",
        # The instance's reports too (ready.json, verify.json, heartbeat, manifest): status and up read them there.
        "control_uri": f"s3://{bucket}/_gpulease/ckpt/control/",
        "cli_install_command": ["snap", "install", "aws-cli", "--classic"],
        "self_release": False,
        "deadline_api": False,  # AWS reads its tags through IMDS (instance_metadata_tags enabled)
        "shutdown_command": ["shutdown", "-h", "now"],
        "nvidia_smi": "nvidia-smi",
        # The default family is a Deep Learning AMI: the driver comes with it, nothing is installed.
        "nvidia_driver": "preinstalled",
        "driver_packages": ["nvidia-headless-580-server", "nvidia-utils-580-server"],
        # The tools: one object in the checkpoint bucket, under the experiment's own prefix (its role reads it).
        "tools": {
            "bucket": bucket,
            "key": f"_gpulease/ckpt/tools/{userdata.tools_sha256()}.json",
            "region": "us-east-1",
            "sha256": userdata.tools_sha256(),
        },
        # The run sections: the budget's thresholds for the watchdog's spend estimate (the budget and the hourly
        # price are instance tags), the family the manifest records, one copy command for the control files.
        "budget_thresholds": [50.0, 80.0, 100.0],
        "image_family": "dlami-base-ubuntu22",
        "control_upload_command": ["aws", "s3", "cp", "{src}", "{dst}", "--region", "{region}", "--only-show-errors"],
    }


def test_aws_user_data_is_gzipped_well_under_the_limit_and_stable_across_runs(aws_render) -> None:
    encoded = aws_render.one(INSTANCE).inputs["userDataBase64"]
    raw = base64.b64decode(encoded)
    assert raw[:2] == b"\x1f\x8b" and len(raw) <= 0.75 * 16 * 1024
    assert aws_render.one(INSTANCE).inputs["userDataReplaceOnChange"] is True
    again = render_experiment(experiment(**SPEC_OVERRIDES))
    assert again.one(INSTANCE).inputs["userDataBase64"] == encoded  # an unchanged spec never replaces the instance


def test_user_data_past_the_margin_is_refused_with_the_stack_and_fields_named(monkeypatch) -> None:
    settings = _alicloud_settings()
    packed = userdata.pack_user_data(settings)
    assert gzip.decompress(packed) == render_user_data(settings).encode()
    monkeypatch.setitem(userdata.USER_DATA_LIMITS, "alicloud", int(len(packed) / 0.75) + 4)
    assert userdata.pack_user_data(settings) == packed
    monkeypatch.setitem(userdata.USER_DATA_LIMITS, "alicloud", int(len(packed) / 0.75) - 4)
    with pytest.raises(userdata.UserDataTooLargeError) as err:
        render_user_data_base64(settings)
    assert str(err.value).startswith("stack 'ali', experiment 'exp1': the instance's user-data would be ")
    assert "shorten watchdog.warnHook, checkpoints.hook or checkpoints.process" in str(err.value)


def _docstring_free(source: str) -> str:
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


@pytest.mark.parametrize("name", ["instance_setup.py", "watchdog.py", "job_agent.py", "cloud_access.py", "control.py",
                                  "heartbeat.py", "verify.py", "manifest.py", "run_job.py", "staging.py",
                                  "staging_files.py", "staging_http.py", "staging_hash.py", "staging_fetch.py",
                                  "staging_parts.py", "staging_hubs.py"])
def test_the_shipped_tools_are_the_tested_sources_and_run_on_python_3_10(name: str) -> None:
    shipped = json.loads(userdata.tools_bundle())["files"][name]
    source = (ROOT / "instance" / name).read_text()
    assert _docstring_free(shipped) == _docstring_free(source)
    ast.parse(shipped, feature_version=(3, 10))  # Ubuntu 22.04's python3
    assert "from datetime import UTC" not in source
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
    }
    # The tools import each other (shipped side by side under /opt/gpulease/) and the standard library only.
    shipped_side_by_side = {"instance"} | {path.stem for path in userdata.TOOL_SCRIPTS}
    assert imported - shipped_side_by_side <= set(sys.stdlib_module_names), "python3 and nothing else"


def test_user_data_carries_the_loader_and_the_bundle_hash_not_the_tools(aws_render, aws_text: str) -> None:
    written = files(cloud_config(aws_text))
    loader = written["/opt/gpulease/fetch_tools.py"]["content"]
    assert _docstring_free(loader) == _docstring_free((ROOT / "instance" / "fetch_tools.py").read_text())
    ast.parse(loader, feature_version=(3, 10))
    assert not any(path.endswith(("/watchdog.py", "/instance_setup.py", "/cloud_access.py")) for path in written)
    obj = aws_render.one(BUCKET_OBJECT)
    assert obj.inputs["key"] == userdata.tools_key("ckpt/") == f"_gpulease/ckpt/tools/{userdata.tools_sha256()}.json"
    assert obj.inputs["bucket"] == aws_render.one(BUCKET).inputs["bucket"]
    assert hashlib.sha256(obj.inputs["content"].encode()).hexdigest() == userdata.tools_sha256()
    assert obj.inputs["serverSideEncryption"] == "AES256"


def test_units_run_the_tools_and_the_watchdog_always_restarts(aws_text: str) -> None:
    config = cloud_config(aws_text)
    written = files(config)
    watchdog_unit = written[f"/etc/systemd/system/{userdata.WATCHDOG_UNIT}"]["content"]
    setup_unit = written[f"/etc/systemd/system/{userdata.SETUP_UNIT}"]["content"]
    assert "ExecStartPre=/usr/bin/python3 /opt/gpulease/fetch_tools.py --wait 60\n"  in watchdog_unit
    assert "ExecStartPre=/usr/bin/python3 /opt/gpulease/fetch_tools.py --wait 900\n" in setup_unit
    assert "ExecStart=/usr/bin/python3 /opt/gpulease/watchdog.py\n" in watchdog_unit
    assert "Restart=always\n" in watchdog_unit and "StartLimitIntervalSec=0\n" in watchdog_unit
    assert "ExecStart=/usr/bin/python3 /opt/gpulease/instance_setup.py\n" in setup_unit
    assert "Type=oneshot\n" in setup_unit and "WantedBy=multi-user.target\n" in setup_unit  # every boot
    assert config["runcmd"] == [
        ["sh", "-c", f"systemctl disable --now {userdata.JOB_AGENT_UNIT} 2>/dev/null; "
                     f"rm -f /etc/systemd/system/{userdata.JOB_AGENT_UNIT}; true"],
        ["systemctl", "daemon-reload"],
        ["systemctl", "enable", "--now", "--no-block", userdata.WATCHDOG_UNIT],
        ["systemctl", "enable", "--now", "--no-block", userdata.SETUP_UNIT],
    ]


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed here")
def test_units_pass_systemd_verification(aws_text: str, tmp_path: Path) -> None:
    written = files(cloud_config(aws_text))
    for unit in (userdata.WATCHDOG_UNIT, userdata.SETUP_UNIT):
        path = tmp_path / unit
        path.write_text(written[f"/etc/systemd/system/{unit}"]["content"])
        out = subprocess.run(["systemd-analyze", "verify", str(path)], capture_output=True, text=True)
        problems = [line for line in out.stderr.splitlines() if unit in line and "not found" not in line.lower()]
        assert problems == [], out.stderr


def test_no_credentials_travel_in_user_data(aws_text: str) -> None:
    settings = json.loads(files(cloud_config(aws_text))[userdata.SETTINGS_PATH]["content"])
    # job_agent: CI stacks only; cluster: cluster nodes only; the workflow's fields: only when a stack uses that part
    # (settings.WORKFLOW_DEFAULTS); verify and job only when the spec declares them.
    workflow_only = {"job_agent", "cluster", "phase", "data_sources", "stage_commands", "hub_token_secret",
                     "secret_command", "idle_source", "idle_cpu_percent", "verify", "job"}
    assert set(settings) == set(BootstrapSettings.model_fields) - workflow_only
    assert "deadline" not in settings  # a renewal changes the instance's tag, never its user-data
    lowered = aws_text.lower()
    # No key material: no long-term AWS (AKIA...) or Alibaba (LTAI...) key id, no environment credentials, no
    # private key. (The loader names the fields of the role's temporary credentials; it carries none.)
    for needle in ("aws_secret_access_key", "aws_access_key_id", "private key", "akia", "ltai"):
        assert needle not in lowered


def _load_shipped(name: str) -> types.ModuleType:
    """The tool exactly as the bundle carries it, imported as a module of its own."""
    module = types.ModuleType(f"shipped_{name}")
    sys.modules[module.__name__] = module  # dataclasses resolve their annotations through sys.modules
    try:
        exec(compile(json.loads(userdata.tools_bundle())["files"][f"{name}.py"], name, "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module


def test_aws_shipped_bootstrap_looks_the_volume_up_by_its_nvme_serial(aws_render) -> None:
    volume_id = aws_render.one(VOLUME).id
    setup = _load_shipped("instance_setup")
    assert setup.device_candidates("aws", volume_id) == [
        f"/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_{volume_id.replace('-', '')}",
        "/dev/sdf",
        "/dev/xvdf",
    ]


def test_shipped_bootstrap_never_formats_without_the_blank_disk_decision() -> None:
    """Every mkfs in the shipped bootstrap sits behind ``if not fmt: return`` where fmt is format_decision's."""
    tree = ast.parse(json.loads(userdata.tools_bundle())["files"]["instance_setup.py"])
    mkfs_functions = [
        fn
        for fn in ast.walk(tree)
        if isinstance(fn, ast.FunctionDef)
        and any(isinstance(c, ast.JoinedStr) and "mkfs." in ast.unparse(c) for c in ast.walk(fn))
    ]
    assert [fn.name for fn in mkfs_functions] == ["mount_data_disk"]
    source = ast.unparse(mkfs_functions[0])
    decided = source.index("fmt, why = format_decision(ev)")
    guard = source.index("if not fmt:", decided)
    assert decided < guard < source.index("mkfs.")


def _alicloud_settings() -> BootstrapSettings:
    spec = ExperimentSpec.model_validate(
        {**experiment(cloud="alicloud"), **SPEC_OVERRIDES, "gpu": {"instanceType": "ecs.gn7i-c8g1.2xlarge"}}
    )
    return settings_for(
        spec,
        cloud="alicloud",
        region="cn-hangzhou",
        stack="ali",
        checkpoint_uri="oss://gpulease-ckpt/ckpt/",
        data_disk_id="d-bp1abcdefghij1234567",
        tools_bucket="gpulease-boot-ali-abc123",
        nvidia_driver="absent",
    )


def test_alicloud_user_data_uses_its_metadata_service_ossutil_and_the_disk_serial() -> None:
    encoded = render_user_data_base64(_alicloud_settings())
    assert len(base64.b64decode(encoded)) <= 0.75 * userdata.USER_DATA_LIMITS["alicloud"]
    text = decode(encoded)
    settings = json.loads(files(cloud_config(text))[userdata.SETTINGS_PATH]["content"])
    assert settings["cloud"] == "alicloud" and settings["region"] == "cn-hangzhou"
    assert settings["metadata_url"] == "http://100.100.100.200"
    assert settings["data_disk_id"] == "d-bp1abcdefghij1234567"
    assert settings["checkpoint_uri"] == "oss://gpulease-ckpt/ckpt/"
    assert settings["self_release"] is True
    assert settings["deadline_api"] is True
    assert (settings["nvidia_driver"], settings["driver_packages"]) == (
        "absent", ["nvidia-headless-580-server", "nvidia-utils-580-server"]
    )
    assert settings["tools"] == {"bucket": "gpulease-boot-ali-abc123", "key": userdata.tools_key(""),
                                 "region": "cn-hangzhou", "sha256": userdata.tools_sha256()}
    # Explicit STS credentials in a config file and the https internal endpoint, never ossutil's EcsRamRole mode
    # (a tokenless metadata read, refused in hardened mode).
    assert settings["sync_command"] == [
        "ossutil", "cp", "-r", "-u", "-f", "{src}", "{dst}", "-e", "{endpoint}", "-c", "{oss_config}",
        "--sign-version", "v4", "--region", "{region}",
    ]
    assert all("EcsRamRole" not in json.dumps(settings[k]) for k in settings)
    assert (settings["idle_minutes"], settings["checkpoint_interval_minutes"], "deadline" in settings) == (45, 10, False)
    setup = _load_shipped("instance_setup")
    assert setup.device_candidates("alicloud", settings["data_disk_id"]) == [
        "/dev/disk/by-id/virtio-bp1abcdefghij1234567",
        "/dev/disk/by-id/nvme-Alibaba_Cloud_Elastic_Block_Storage_bp1abcdefghij1234567",
    ]


def test_shipped_shell_passes_shellcheck(tmp_path: Path) -> None:
    shellcheck = ROOT / ".venv" / "bin" / "shellcheck"
    if not shellcheck.exists():
        found = shutil.which("shellcheck")
        if found is None:
            pytest.skip("shellcheck is not installed (requirements-dev.txt installs it into .venv)")
        shellcheck = Path(found)
    scripts = [cmd[2] for cmd in userdata.CLI_INSTALL_COMMANDS.values() if cmd[:2] == ["/bin/sh", "-c"]]
    assert scripts, "the Alibaba ossutil install is the one shell snippet shipped"
    for i, script in enumerate(scripts):
        path = tmp_path / f"snippet-{i}.sh"
        path.write_text("#!/bin/sh\n" + script + "\n")
        out = subprocess.run([str(shellcheck), "--shell=sh", str(path)], capture_output=True, text=True)
        assert out.returncode == 0, out.stdout


@pytest.mark.parametrize(
    ("overrides", "path", "message"),
    [
        ({"checkpoints": {"signal": "USR1"}}, "gpulease:experiment.checkpoints", "signal and process go together"),
        ({"checkpoints": {"signal": "KILL", "process": "train.py"}}, "gpulease:experiment.checkpoints.signal", "accepted: USR1"),
        ({"watchdog": {"busyMarker": "busy"}}, "gpulease:experiment.watchdog.busyMarker", "not an absolute path"),
        ({"watchdog": {"onRebalance": "panic"}}, "gpulease:experiment.watchdog.onRebalance", "checkpoint"),
        ({"watchdog": {"finalSyncMinutes": 0}}, "gpulease:experiment.watchdog.finalSyncMinutes", "greater than or equal to 1"),
    ],
)
def test_bad_watchdog_settings_are_refused_with_the_field_named(overrides: dict, path: str, message: str) -> None:
    from components.spec.load import SpecError, load_stack_spec

    with pytest.raises(SpecError) as err:
        load_stack_spec("dev", {"gpulease:experiment": experiment(**overrides)})
    problems = dict(err.value.problems)
    assert path in problems, problems
    assert message in problems[path]
