"""The CI workflows for ephemeral stacks: valid (actionlint with shellcheck), and shaped so that every way a
run can end leaves nothing billing."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gpulease.review.stacks import PROJECT_ROOT
from tests.support.workflows import WORKFLOWS, load

TRAIN = WORKFLOWS / "ephemeral-train.yml"
GC = WORKFLOWS / "ephemeral-gc.yml"
VENV_BIN = PROJECT_ROOT / ".venv" / "bin"


def actionlint() -> str:
    found = VENV_BIN / "actionlint"
    if found.exists():
        return str(found)
    return shutil.which("actionlint") or pytest.skip("actionlint is not installed (requirements-dev.txt)")


@pytest.mark.parametrize("path", sorted(WORKFLOWS.glob("*.yml")), ids=lambda p: p.name)
def test_actionlint_with_shellcheck_is_clean(path: Path) -> None:
    """Every workflow of the repository, these two and any added later (the price refresh, the sweep...)."""
    args = [actionlint(), "-no-color"]
    if (VENV_BIN / "shellcheck").exists():
        args += ["-shellcheck", str(VENV_BIN / "shellcheck")]
    result = subprocess.run([*args, str(path)], capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def steps(doc: dict[str, Any], job: str) -> list[dict[str, Any]]:
    return doc["jobs"][job]["steps"]


def step_using(doc: dict[str, Any], job: str, action: str) -> dict[str, Any]:
    [found] = [s for s in steps(doc, job) if str(s.get("uses", "")).startswith(action + "@")]
    return found


def test_train_triggers_concurrency_and_timeouts_shorter_than_the_deadline() -> None:
    doc = load(TRAIN)
    assert set(doc["on"]["workflow_dispatch"]["inputs"]) == {"base-stack", "command"}
    assert doc["on"]["pull_request"]["types"] == ["labeled"]
    job = doc["jobs"]["train"]
    assert "github.event.label.name == 'gpu-train'" in job["if"]
    assert doc["concurrency"]["group"].startswith("ephemeral-train-") and doc["concurrency"]["cancel-in-progress"] is False

    [run_step] = [s for s in job["steps"] if "-m gpulease ephemeral run" in s.get("run", "")]
    max_hours = float(re.search(r"--max-hours (\S+)", run_step["run"]).group(1))
    assert run_step["timeout-minutes"] < job["timeout-minutes"] < max_hours * 60, (
        "the run step dies first, the job keeps time for clean-up, both before the stack's own deadline"
    )
    assert '-- "$TRAIN_COMMAND"' in run_step["run"], "inputs reach the shell through env, never inline expressions"


def test_train_uses_oidc_and_no_long_lived_keys() -> None:
    doc = load(TRAIN)
    job = doc["jobs"]["train"]
    assert job["permissions"]["id-token"] == "write"
    assert doc["permissions"] == {"contents": "read"}
    creds = step_using(doc, "train", "aws-actions/configure-aws-credentials")
    assert creds["with"]["role-to-assume"] == "${{ vars.AWS_ROLE_ARN }}"
    text = TRAIN.read_text() + GC.read_text()
    assert not re.search(r"aws-access-key-id|aws-secret-access-key|AWS_SECRET_ACCESS_KEY|ALIBABA_CLOUD_ACCESS_KEY", text)


def test_train_installs_through_make_and_pulumi_actions_and_always_cleans_up() -> None:
    doc = load(TRAIN)
    all_steps = steps(doc, "train")
    assert any(s.get("run", "").strip() == "make setup" for s in all_steps)
    assert "pulumi-version" in step_using(doc, "train", "pulumi/actions")["with"]
    names = [s.get("uses", s.get("run", "")) for s in all_steps]
    assert names.index(step_using(doc, "train", "aws-actions/configure-aws-credentials")["uses"]) < next(
        i for i, s in enumerate(all_steps) if "-m gpulease ephemeral run" in s.get("run", "")
    )
    last = all_steps[-1]
    assert last["if"] == "always()" and "gpulease ephemeral down --current-run" in last["run"]


def test_gc_runs_on_a_schedule_with_the_same_credentials() -> None:
    doc = load(GC)
    assert doc["on"]["schedule"][0]["cron"]
    assert "workflow_dispatch" in doc["on"]
    job = doc["jobs"]["gc"]
    assert job["permissions"]["id-token"] == "write" and doc["concurrency"]["group"] == "ephemeral-gc"
    assert step_using(doc, "gc", "aws-actions/configure-aws-credentials")["with"]["role-to-assume"] == "${{ vars.AWS_ROLE_ARN }}"
    assert any("gpulease ephemeral gc" in s.get("run", "") for s in steps(doc, "gc"))
