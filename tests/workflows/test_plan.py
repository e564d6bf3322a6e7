"""The pull-request workflow: valid for actionlint (with shellcheck on its scripts), and wired as documented."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

from gpulease.review.report import COMMENT_MARKER
from tests.support.paths import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "policy-review.yml"
BIN = ROOT / ".venv" / "bin"


def actionlint(path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run([str(BIN / "actionlint"), "-no-color", str(path)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=60)


def test_actionlint_passes():
    result = actionlint(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_would_catch_a_broken_workflow(tmp_path):
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text(WORKFLOW.read_text().replace("needs.credentials.outputs.stacks", "needs.credential.outputs.stacks"))
    result = actionlint(broken)
    assert result.returncode != 0 and "credential" in result.stdout


def test_offline_job_reviews_every_stack_and_keeps_one_comment():
    flow = yaml.safe_load(WORKFLOW.read_text())
    assert "pull_request" in flow[True]  # PyYAML reads the bare key `on` as True
    offline = flow["jobs"]["offline-plan"]
    assert offline["permissions"]["pull-requests"] == "write"
    runs = "\n".join(step.get("run", "") for step in offline["steps"])
    assert ".venv/bin/python -m gpulease plan . --format markdown --output plan.md" in runs
    script = next(step["with"]["script"] for step in offline["steps"] if "github-script" in step.get("uses", ""))
    assert f"const marker = '{COMMENT_MARKER}';" in script
    assert "updateComment" in script and "createComment" in script
    assert any(step.get("if") == "steps.plan.outputs.exit-code != '0'" for step in offline["steps"])


def test_preview_job_runs_the_pack_only_with_credentials():
    flow = yaml.safe_load(WORKFLOW.read_text())
    preview = flow["jobs"]["preview"]
    assert preview["needs"] == "credentials"
    assert preview["if"] == "needs.credentials.outputs.stacks != '[]'"
    action = next(step for step in preview["steps"] if step.get("uses", "").startswith("pulumi/actions@"))
    assert action["with"]["command"] == "preview"
    assert action["with"]["policyPacks"] == "policies"
    select = flow["jobs"]["credentials"]["steps"][-1]
    assert set(select["env"]) == {"PULUMI_ACCESS_TOKEN", "AWS_ROLE_TO_ASSUME", "ALICLOUD_ACCESS_KEY"}


def _select(tmp_path: Path, **secrets: str) -> str:
    """Run the credentials job's selection script against this repository's stacks/."""
    flow = yaml.safe_load(WORKFLOW.read_text())
    script = flow["jobs"]["credentials"]["steps"][-1]["run"]
    output = tmp_path / "github_output"
    output.write_text("")
    env = {"PATH": os.environ.get("PATH", ""), "GITHUB_OUTPUT": str(output), **secrets}
    subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=ROOT, env=env, check=True,
                   capture_output=True, timeout=30)
    return output.read_text().strip()


def test_stack_selection_follows_the_configured_credentials(tmp_path):
    stacks = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
    ali = [s for s in stacks if "alicloud:region" in (ROOT / "stacks" / f"Pulumi.{s}.yaml").read_text()]
    aws = [s for s in stacks if s not in ali]
    assert _select(tmp_path) == "stacks=[]"
    assert _select(tmp_path, AWS_ROLE_TO_ASSUME="arn:aws:iam::1:role/ci") == "stacks=[]"  # no Pulumi token
    only_aws = _select(tmp_path, PULUMI_ACCESS_TOKEN="pul-x", AWS_ROLE_TO_ASSUME="arn:aws:iam::1:role/ci")
    assert only_aws == "stacks=" + str(aws).replace("'", '"').replace(" ", "")
    both = _select(tmp_path, PULUMI_ACCESS_TOKEN="pul-x", AWS_ROLE_TO_ASSUME="r", ALICLOUD_ACCESS_KEY="k")
    assert both == "stacks=" + str(sorted(aws + ali)).replace("'", '"').replace(" ", "")
