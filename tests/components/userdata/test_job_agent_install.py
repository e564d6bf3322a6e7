"""The job agent in user-data: installed and started on CI stacks only, within AWS's 16 KB, the shipped file being
the tested source."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from components import userdata
from components.spec.experiment import ExperimentSpec
from components.userdata import JobAgentSettings, render_user_data_base64, settings_for
from tests.support.specs import experiment, render_experiment
from tests.support.userdata import INSTANCE, SPEC_OVERRIDES, cloud_config, decode, files

CI_RUN = "octo/repo/actions/runs/1234567890"
AGENT_PATH = "/opt/gpulease/job_agent.py"
UNIT_PATH = f"/etc/systemd/system/{userdata.JOB_AGENT_UNIT}"


@pytest.fixture(scope="module")
def ci_render():
    r = render_experiment(experiment(**SPEC_OVERRIDES, ciRun=CI_RUN))
    assert r.error is None, r.error
    return r


@pytest.fixture(scope="module")
def ci_text(ci_render) -> str:
    return decode(ci_render.one(INSTANCE).inputs["userDataBase64"])


def test_a_ci_stack_installs_and_starts_the_agent_after_the_bootstrap(ci_text: str) -> None:
    config = cloud_config(ci_text)
    written = files(config)
    assert AGENT_PATH not in written  # it comes with the other tools, from the bundle
    assert "job_agent.py" in json.loads(userdata.tools_bundle())["files"]
    unit = written[UNIT_PATH]["content"]
    assert "ExecStartPre=/usr/bin/python3 /opt/gpulease/fetch_tools.py --wait 60\n" in unit
    assert "ExecStart=/usr/bin/python3 /opt/gpulease/job_agent.py\n" in unit
    assert f"After=network-online.target {userdata.SETUP_UNIT}\n" in unit  # the data disk is mounted first
    assert "Restart=always\n" in unit and "KillMode=mixed\n" in unit  # SIGTERM to the agent, which reports the job
    assert config["runcmd"][-1] == ["systemctl", "enable", "--now", "--no-block", userdata.JOB_AGENT_UNIT]
    settings = json.loads(written[userdata.SETTINGS_PATH]["content"])
    assert settings["job_agent"] == {
        "poll_seconds": 5,
        "log_chunk_seconds": 5,
        "kill_grace_seconds": 30,
        "list_command": ["aws", "s3", "ls", "{dst}", "--region", "{region}"],
        "copy_command": ["aws", "s3", "cp", "{src}", "{dst}", "--region", "{region}", "--only-show-errors"],
        "copy_dir_command": [
            "aws", "s3", "cp", "{src}", "{dst}", "--recursive", "--region", "{region}", "--only-show-errors"
        ],
    }
    assert settings["checkpoint_uri"].startswith("s3://") and settings["checkpoint_uri"].endswith("/ckpt/")


def test_ci_user_data_fits_aws_with_a_quarter_to_spare_and_is_stable(ci_render) -> None:
    encoded = ci_render.one(INSTANCE).inputs["userDataBase64"]
    raw = base64.b64decode(encoded)
    assert raw[:2] == b"\x1f\x8b" and len(raw) <= 0.75 * userdata.USER_DATA_LIMITS["aws"]
    again = render_experiment(experiment(**SPEC_OVERRIDES, ciRun=CI_RUN))
    assert again.one(INSTANCE).inputs["userDataBase64"] == encoded  # no instance replacement on an unchanged spec


def test_other_stacks_get_exactly_the_user_data_they_had(ci_text: str) -> None:
    plain = render_experiment(experiment(**SPEC_OVERRIDES))
    text = decode(plain.one(INSTANCE).inputs["userDataBase64"])
    config = cloud_config(text)
    ci = cloud_config(ci_text)
    assert AGENT_PATH not in files(config) and UNIT_PATH not in files(config)
    assert "job_agent" not in json.loads(files(config)[userdata.SETTINGS_PATH]["content"])
    # Never enabled; a unit a baked image brought along is disabled and removed first (before daemon-reload).
    assert config["runcmd"][0] == ["sh", "-c", f"systemctl disable --now {userdata.JOB_AGENT_UNIT} 2>/dev/null; "
                                               f"rm -f /etc/systemd/system/{userdata.JOB_AGENT_UNIT}; true"]
    assert config["runcmd"][1] == ["systemctl", "daemon-reload"]
    assert all(userdata.JOB_AGENT_UNIT not in " ".join(cmd) for cmd in config["runcmd"][1:])
    assert not any(cmd[0] == "sh" and "disable" in cmd[2] for cmd in ci["runcmd"])  # the CI stack keeps its agent
    # The CI document is the plain one plus the agent: nothing else moved (a plain stack's instance is not replaced).
    assert [f for f in ci["write_files"] if f["path"] not in (AGENT_PATH, UNIT_PATH, userdata.SETTINGS_PATH)] == [
        f for f in config["write_files"] if f["path"] != userdata.SETTINGS_PATH
    ]


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed here")
def test_the_unit_passes_systemd_verification(ci_text: str, tmp_path: Path) -> None:
    path = tmp_path / userdata.JOB_AGENT_UNIT
    path.write_text(files(cloud_config(ci_text))[UNIT_PATH]["content"])
    out = subprocess.run(["systemd-analyze", "verify", str(path)], capture_output=True, text=True)
    problems = [line for line in out.stderr.splitlines() if userdata.JOB_AGENT_UNIT in line and "not found" not in line.lower()]
    assert problems == [], out.stderr


def _settings(cloud: str, ci_run: str | None, checkpoint_uri: str | None) -> userdata.BootstrapSettings:
    extra: dict[str, Any] = {"ciRun": ci_run} if ci_run else {}
    if cloud == "alicloud":
        extra["gpu"] = {"instanceType": "ecs.gn7i-c8g1.2xlarge"}
    spec = ExperimentSpec.model_validate({**experiment(cloud=cloud), **SPEC_OVERRIDES, **extra})
    return settings_for(
        spec,
        cloud=cloud,
        region="cn-hangzhou" if cloud == "alicloud" else "us-east-1",
        stack="ci-1-abc",
        checkpoint_uri=checkpoint_uri,
        data_disk_id="d-bp1abcdefghij1234567" if cloud == "alicloud" else "vol-0123456789abcdef0",
        tools_bucket="gpulease-boot-ci-abc123",
        nvidia_driver="absent",
    )


def test_alicloud_ci_stacks_talk_to_oss_through_ossutil_with_the_instance_role() -> None:
    settings = _settings("alicloud", CI_RUN, "oss://gpulease-ckpt/ckpt/")
    agent = settings.job_agent
    assert isinstance(agent, JobAgentSettings)
    auth = ["-e", "{endpoint}", "-c", "{oss_config}", "--sign-version", "v4", "--region", "{region}"]
    assert agent.list_command == ["ossutil", "ls", "-d", "{dst}", *auth]
    assert agent.copy_command == ["ossutil", "cp", "-f", "{src}", "{dst}", *auth]
    assert agent.copy_dir_command == ["ossutil", "cp", "-r", "-f", "{src}", "{dst}", *auth]
    text = decode(render_user_data_base64(settings))
    assert UNIT_PATH in files(cloud_config(text))


def test_no_agent_without_a_bucket_to_take_jobs_from() -> None:
    assert _settings("aws", CI_RUN, None).job_agent is None
    assert _settings("aws", None, "s3://b/ckpt/").job_agent is None
