"""The scheduled sweep workflow: valid for actionlint (with shellcheck on its scripts), OIDC credentials only,
an account allowlist, and a dry run unless scheduled or asked."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tests.support.paths import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "reap.yml"


def _tool(name: str) -> str:
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    assert found, f"{name} is installed from requirements-dev.txt"
    return found


def test_actionlint_accepts_the_workflow():
    env = {"PATH": f"{Path(_tool('shellcheck')).parent}:/usr/bin:/bin"}
    proc = subprocess.run([_tool("actionlint"), str(WORKFLOW)], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_workflow_uses_oidc_an_allowlist_and_acts_only_when_scheduled_or_asked():
    text = WORKFLOW.read_text()
    flow = yaml.safe_load(text)
    triggers = flow[True]  # YAML 1.1 reads the key "on" as a boolean
    assert triggers["schedule"][0]["cron"].split()[1:] == ["*", "*", "*", "*"], "hourly"
    assert triggers["workflow_dispatch"]["inputs"]["execute"]["default"] is False
    assert flow["permissions"] == {"id-token": "write", "contents": "read"}
    job = flow["jobs"]["reap"]
    assert job["env"]["GPULEASE_ALLOWED_ACCOUNTS"] == "${{ vars.GPULEASE_ACCOUNT_ID }}"
    assert job["env"]["REAP_EXECUTE"] == "${{ github.event_name == 'schedule' || inputs.execute }}"
    creds = next(s for s in job["steps"] if s.get("uses", "").startswith("aws-actions/configure-aws-credentials"))
    assert "role-to-assume" in creds["with"]
    assert "aws-access-key-id" not in creds["with"] and "secrets." not in text
    sweep = next(s for s in job["steps"] if s.get("name") == "Sweep")["run"]
    assert "python -m gpulease reap" in sweep and "--execute" in sweep and "exit 2" in sweep


def test_alibaba_cloud_job_uses_oidc_through_the_sdk_chain_an_allowlist_and_a_step_timeout():
    text = WORKFLOW.read_text()
    flow = yaml.safe_load(text)
    job = flow["jobs"]["reap-alicloud"]
    assert job["concurrency"]["group"] != flow["jobs"]["reap"]["concurrency"]["group"], "one cloud never waits on the other"
    assert job["env"]["GPULEASE_ALLOWED_ACCOUNTS"] == "${{ vars.GPULEASE_ALICLOUD_ACCOUNT_ID }}"
    assert job["env"]["ALIBABA_CLOUD_ROLE_ARN"] == "${{ vars.GPULEASE_ALICLOUD_ROLE_ARN }}"
    assert job["env"]["ALIBABA_CLOUD_OIDC_TOKEN_FILE"].endswith("/.oidc-token")
    token = next(s for s in job["steps"] if s.get("name") == "OIDC token for the RAM role")["run"]
    assert "ACTIONS_ID_TOKEN_REQUEST_URL" in token and "audience=sts.aliyuncs.com" in token
    sweeps = {name: next(s for s in flow["jobs"][name]["steps"] if s.get("name") == "Sweep") for name in ("reap", "reap-alicloud")}
    assert all(0 < step["timeout-minutes"] < flow["jobs"][name]["timeout-minutes"] for name, step in sweeps.items())
    assert "--cloud alicloud" in sweeps["reap-alicloud"]["run"] and "exit 2" in sweeps["reap-alicloud"]["run"]
    assert "ALIBABA_CLOUD_ACCESS_KEY" not in text and "secrets." not in text
