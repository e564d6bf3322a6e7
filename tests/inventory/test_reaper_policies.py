"""The reaper's documented IAM and RAM policies (docs/inventory-and-reaper.md): no statement lets the role tag a
resource it did not just create, nor delete one that is not tagged as managed."""

from __future__ import annotations

import json
import re

from tests.support.paths import ROOT

DOC = ROOT / "docs" / "inventory-and-reaper.md"
TAGGING = {"ec2:CreateTags", "ecs:TagResources", "tag:TagResources", "vpc:TagResources", "oss:PutBucketTagging"}
DESTRUCTIVE = {"ec2:TerminateInstances", "ec2:ReleaseAddress", "ec2:DeleteVolume", "ec2:DeleteSnapshot",
               "ec2:DeregisterImage", "ecs:DeleteInstances", "ecs:DeleteDisk", "ecs:DeleteSnapshot", "ecs:DeleteImage",
               "vpc:ReleaseEipAddress"}


def documented_policies() -> list[dict]:
    blocks = re.findall(r"```json\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    policies = [json.loads(b) for b in blocks]
    return [p for p in policies if isinstance(p, dict) and "Statement" in p]


def actions(statement: dict) -> set[str]:
    found = statement["Action"]
    return {found} if isinstance(found, str) else set(found)


def test_the_page_documents_both_clouds_policies() -> None:
    versions = sorted(p["Version"] for p in documented_policies())
    assert versions == ["1", "2012-10-17"]


def test_tagging_is_allowed_only_inside_the_call_that_creates_the_snapshot() -> None:
    tagging = [s for p in documented_policies() for s in p["Statement"] if actions(s) & TAGGING]
    assert tagging, "the AWS reaper tags its final snapshots"
    for statement in tagging:
        assert actions(statement) == {"ec2:CreateTags"}, statement
        assert statement["Condition"] == {"StringEquals": {"ec2:CreateAction": "CreateSnapshot"}}, statement
        assert statement["Resource"] == "arn:aws:ec2:*::snapshot/*", statement


def test_the_alibaba_reaper_cannot_tag_at_all() -> None:
    (ali,) = [p for p in documented_policies() if p["Version"] == "1"]
    granted = {a for s in ali["Statement"] for a in actions(s)}
    assert not {a for a in granted if "Tag" in a and not a.startswith(("ecs:Describe", "oss:GetBucketTagging"))}


def test_destructive_actions_need_the_managed_tag() -> None:
    for policy in documented_policies():
        key = "aws:ResourceTag/gpulease:managed-by" if policy["Version"] != "1" else "acs:ResourceTag/gpulease:managed-by"
        for statement in policy["Statement"]:
            if actions(statement) & DESTRUCTIVE:
                assert statement["Condition"] == {"StringEquals": {key: "gpulease"}}, statement
