"""``gpulease down`` whose ``pulumi destroy`` fails part-way (through the recording stand-in of the Automation
API): exit 3, what is gone and what is left with its monthly cost; ``--all`` never claims the disk or the bucket
removed then, and removes nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpulease.cli.main import main
from gpulease.lifecycle import verdict
from tests.cli.test_down import BUCKET, RETAINED, STACK

INSTANCE = "aws:ec2/instance:Instance"
LINES = [{"resource": "llama7b-lora-instance", "type": INSTANCE, "item": "g6.xlarge spot", "hourlyUsd": 0.35,
          "monthlyUsd": 255.5, "retained": False},
         {"resource": "llama7b-lora-eip", "type": "aws:ec2/eip:Eip", "item": "public IPv4", "hourlyUsd": 0.005,
          "monthlyUsd": 3.65, "retained": False},
         *[{**r, "hourlyUsd": r["monthlyUsd"] / 730, "retained": True} for r in RETAINED]]


@pytest.fixture
def priced(deployed, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(verdict, "REVIEW", lambda path, stack: verdict.Verdict(
        stack=stack, status="pass", retained=[dict(r) for r in RETAINED], retained_monthly_usd=20.6,
        priced=[dict(x) for x in LINES]))
    backend = deployed["backend"]
    backend.destroy_failures = 1
    # The destroy deletes the instance, and forgets the retained disk (a delete step; the cloud keeps it), then fails.
    backend.destroy_deletes_first = [(INSTANCE, "llama7b-lora-instance"), ("aws:ebs/volume:Volume", "llama7b-lora-data")]
    return deployed


def test_a_destroy_that_fails_part_way_is_exit_3_with_what_is_gone_and_left(priced, capsys):
    assert main(["down", STACK]) == 3
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    assert out[0] == f"{STACK}: pulumi destroy failed part-way; the stack is partly destroyed"
    assert out[1:4] == ["gone: llama7b-lora-instance", "left:", "  llama7b-lora-eip (public IPv4): $3.65/month"]
    assert "  llama7b-lora-data (gp3 200 GB): $16.00/month (retained)" in out
    assert not any(line.startswith("  llama7b-lora-instance") for line in out)
    assert f"  in all about $24.25/month while it is left (gpulease down {STACK})" in out
    assert not any(line.split(": ")[-1] == "destroyed" for line in out)
    assert "pulumi destroy failed: DependencyViolation" in captured.err


def test_a_partial_destroy_under_all_removes_nothing_and_never_says_removed(priced, capsys):
    assert main(["down", STACK, "--all", "--yes", "--json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and [e["code"] for e in doc["errors"]] == ["teardown-partial"]
    data = doc["data"]
    assert data["destroyed"] is False and data["partial"] is True and data["removed"] == []
    assert data["gone"] == ["llama7b-lora-instance"]
    assert {x["resource"] for x in data["left"]} == {"llama7b-lora-eip", "llama7b-lora-data",
                                                     "llama7b-lora-checkpoints"}
    assert data["monthlyUsd"] == 24.25
    assert "not removed" in " ".join(data["notes"])
    ec2, s3 = priced["ec2"], priced["s3"]
    assert ec2.describe_volumes(VolumeIds=[priced["volume"]])["Volumes"]  # the disk is still there
    assert BUCKET in [b["Name"] for b in s3.list_buckets()["Buckets"]]


def test_a_partial_destroy_whose_costs_are_unknown_says_so_never_zero(deployed, capsys):
    deployed["backend"].destroy_failures = 1  # the review's lines stubbed without prices: nothing is known
    assert main(["down", STACK, "--json"]) == 3
    data = json.loads(capsys.readouterr().out)["data"]
    assert data["monthlyUsd"] is None and data["gone"] == []


def test_all_that_stops_after_the_disk_says_the_bucket_is_left_with_its_cost(deployed, monkeypatch, capsys):
    from botocore.exceptions import ClientError

    from gpulease.lifecycle import teardown

    def refuse(s3: Any, bucket: str, stack: str) -> str:
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "Access Denied"}}, "DeleteBucket")

    monkeypatch.setattr(teardown, "aws_remove_bucket", refuse)
    assert main(["down", STACK, "--all", "--yes", "--json"]) == 3
    data = json.loads(capsys.readouterr().out)["data"]
    assert data["destroyed"] is True and data["partial"] is True
    assert data["removed"] == [f"disk {deployed['volume']}"]
    assert [x["resource"] for x in data["left"]] == ["llama7b-lora-checkpoints"] and data["monthlyUsd"] == 4.6
    assert BUCKET in [b["Name"] for b in deployed["s3"].list_buckets()["Buckets"]]
