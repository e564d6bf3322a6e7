"""docs/permissions.md lets an operator deploy the example stacks: every resource type they register (and each
with a bake) has a row of actions in gpulease/review/deploy_permissions.py, the page shows that table, and the
page's policies grant every action in it."""

from __future__ import annotations

import fnmatch
import json
import re

import pytest

from gpulease.review.deploy_permissions import DEPLOY_ACTIONS, permissions_table
from tests.review.example_renders import every_example
from tests.support.paths import ROOT

DOC = ROOT / "docs" / "permissions.md"


def registered() -> set[str]:
    return {x.type for _, r in every_example() for x in r.resources if x.custom}


def test_every_registered_type_has_a_row() -> None:
    missing = registered() - set(DEPLOY_ACTIONS)
    assert not missing, f"no pulumi up permissions for {sorted(missing)} in gpulease/review/deploy_permissions.py"


def test_the_rows_cover_what_the_issue_found_missing() -> None:
    granted = {a for n in DEPLOY_ACTIONS.values() for a in n.actions}
    for action in ("ec2:CreateLaunchTemplate", "ec2:CreatePlacementGroup", "ec2:AllocateAddress",
                   "ec2:AssociateAddress", "ec2:CreateSnapshot", "ec2:RegisterImage", "ecs:CreateDeploymentSet",
                   "ecs:CreateSnapshot", "ecs:CreateImage"):
        assert action in granted


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_the_page_shows_the_table(cloud: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    start, end = f"<!-- deploy-permissions:{cloud} -->\n", f"\n<!-- /deploy-permissions:{cloud} -->"
    assert text.split(start, 1)[1].split(end, 1)[0] == permissions_table(cloud)


def page_policy(version: str) -> set[str]:
    """Every action the page's ``pulumi up`` policy for that policy language grants (the first such block)."""
    for block in re.findall(r"```json\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S):
        policy = json.loads(block)
        if isinstance(policy, dict) and policy.get("Version") == version:
            return {a for s in policy["Statement"] if s["Effect"] == "Allow"
                    for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    raise AssertionError(f"no policy of version {version} on the page")


@pytest.mark.parametrize(("cloud", "version"), [("aws", "2012-10-17"), ("alicloud", "1")])
def test_the_pages_policy_grants_every_action_of_every_registered_type(cloud: str, version: str) -> None:
    granted = page_policy(version)
    types = {t for t in registered() if t.startswith(f"{cloud}:")}
    needed = {a for t in types for a in DEPLOY_ACTIONS[t].actions}
    missing = sorted(a for a in needed if not any(fnmatch.fnmatchcase(a, g) for g in granted))
    assert not missing, f"docs/permissions.md's {cloud} policy does not grant {missing}"
