"""The scheduled price refresh: OIDC credentials only, one override file refreshed and proposed as a pull request,
nothing proposed when the refresh fails. actionlint (with shellcheck) checks it with every other workflow in
tests/workflows/test_ephemeral.py."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.support.workflows import WORKFLOWS, load

WORKFLOW = WORKFLOWS / "catalog-refresh.yml"


def _step(job: dict, name: str) -> dict:
    return next(s for s in job["steps"] if s.get("name") == name or str(s.get("uses", "")).startswith(name))


def test_the_refresh_workflow_is_linted_with_the_others():
    assert WORKFLOW in sorted(WORKFLOWS.glob("*.yml"))


def test_weekly_with_oidc_and_no_stored_keys():
    doc = load(WORKFLOW)
    assert doc["on"]["schedule"][0]["cron"].split()[2:] == ["*", "*", "1"], "weekly, on Mondays"
    assert "workflow_dispatch" in doc["on"]
    assert doc["permissions"] == {"id-token": "write", "contents": "write", "pull-requests": "write"}
    text = WORKFLOW.read_text()
    assert "secrets." not in text and "ALIBABA_CLOUD_ACCESS_KEY" not in text and "aws-access-key-id" not in text
    job = doc["jobs"]["refresh"]
    assert "role-to-assume" in _step(job, "aws-actions/configure-aws-credentials")["with"]
    assert "audience=sts.aliyuncs.com" in _step(job, "OIDC token for the RAM role")["run"]


def test_refreshes_the_file_compared_with_itself_and_proposes_it():
    job = load(WORKFLOW)["jobs"]["refresh"]
    assert job["env"]["PRICES_FILE"] == "${{ vars.GPULEASE_PRICES_FILE || 'catalog/prices.yaml' }}"
    run = _step(job, "Refresh")
    assert 0 < run["timeout-minutes"] < job["timeout-minutes"]
    script = run["run"]
    assert script.startswith("set -euo pipefail")  # a failed refresh (exit 1) stops the job: no pull request
    assert 'export GPULEASE_CATALOG_OVERRIDES="$PRICES_FILE"' in script
    assert 'python -m gpulease catalog refresh "${clouds[@]}" --output "$PRICES_FILE"' in script
    pr = _step(job, "peter-evans/create-pull-request")
    assert pr["with"]["add-paths"] == "${{ env.PRICES_FILE }}" and pr["with"]["body-path"] == "refresh-body.md"
    steps = [s.get("name") or s.get("uses") for s in job["steps"]]
    assert steps.index("Refresh") < steps.index("Pull request body") < len(steps) - 1


def test_the_refresh_command_in_the_workflow_parses():
    """The flags the workflow passes are the command's own."""
    from gpulease.cli.main import build_parser

    args = build_parser().parse_args(["catalog", "refresh", "--cloud", "aws", "--cloud", "alicloud", "--output",
                                      str(Path("catalog") / "prices.yaml")])
    assert args.cloud == ["aws", "alicloud"] and args.output == Path("catalog/prices.yaml")
    assert yaml.safe_load(WORKFLOW.read_text())["name"] == "catalog-refresh"
