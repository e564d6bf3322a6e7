"""``gpulease down``: the destroy through the recording stand-in, what stays and what it costs per month (the
review's own retained lines), and ``--all``: asked for on a terminal, refused without one unless ``--yes``, and
then only the disk and bucket moto holds under this stack's tags are removed."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from gpulease.cli import down as down_cli
from gpulease.cli.main import main
from gpulease.core import vocabulary as v
from gpulease.ephemeral.backend import StackInfo
from gpulease.lifecycle import deploy, teardown, verdict
from tests.support.ephemeral import OUTPUTS, RecordingBackend
from tests.support.inventory import ZONE

STACK = "aws-lora-7b"
BUCKET = "gpulease-llm-finetune-aws-lora-7b-ckpt"
RETAINED = [{"resource": "llama7b-lora-data", "type": "aws:ebs/volume:Volume", "item": "gp3 200 GB", "monthlyUsd": 16.0},
            {"resource": "llama7b-lora-checkpoints", "type": "aws:s3/bucket:Bucket", "item": "storage ~200 GB",
             "monthlyUsd": 4.6}]


@pytest.fixture
def review(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verdict, "REVIEW", lambda path, stack: verdict.Verdict(
        stack=stack, status="pass", retained=[dict(r) for r in RETAINED], retained_monthly_usd=20.6))


def _tags(stack: str = STACK) -> list[dict[str, str]]:
    return [{"Key": v.TAG_MANAGED_BY, "Value": v.MANAGED_BY_VALUE}, {"Key": v.TAG_STACK, "Value": stack}]


@pytest.fixture
def deployed(aws, review, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    ec2, s3 = aws.client("ec2"), aws.client("s3")
    volume = ec2.create_volume(AvailabilityZone=ZONE, Size=200, TagSpecifications=[
        {"ResourceType": "volume", "Tags": _tags()}])["VolumeId"]
    s3.create_bucket(Bucket=BUCKET)
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    s3.put_bucket_tagging(Bucket=BUCKET, Tagging={"TagSet": _tags()})
    for body in (b"one", b"two"):  # two versions of one checkpoint, and a delete marker
        s3.put_object(Bucket=BUCKET, Key="checkpoints/step-10.pt", Body=body)
    s3.delete_object(Bucket=BUCKET, Key="checkpoints/step-10.pt")
    backend = RecordingBackend(stacks={STACK: StackInfo(STACK)},
                               outputs_by_stack={STACK: {**OUTPUTS, "dataVolumeId": volume, "bucket": BUCKET}})
    monkeypatch.setattr(deploy, "BACKEND", lambda: backend)
    monkeypatch.setattr(teardown, "CLIENTS", lambda region, creds: (ec2, s3))
    return {"backend": backend, "volume": volume, "ec2": ec2, "s3": s3}


def test_down_destroys_and_says_exactly_what_stays_and_costs(deployed, capsys):
    assert main(["down", STACK]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [
        f"{STACK}: destroyed", "what stays:", "  llama7b-lora-data (gp3 200 GB): $16.00/month",
        "  llama7b-lora-checkpoints (storage ~200 GB): $4.60/month",
        f"  in all about $20.60/month until removed (gpulease down {STACK} --all)"]
    assert deployed["backend"].ops() == ["outputs", "destroy"]
    assert deployed["ec2"].describe_volumes(VolumeIds=[deployed["volume"]])["Volumes"]  # still there


def test_down_all_without_a_terminal_or_yes_refuses_before_anything(deployed, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["down", STACK, "--all", "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["errors"] == [{"code": "bad-input", "message": f"down --all {STACK}: removes the data disk and the "
                              "bucket with every checkpoint; no terminal to confirm on: accepted: --yes"}]
    assert deployed["backend"].calls == []


def test_down_all_asks_for_the_stack_name_on_a_terminal(deployed, monkeypatch, capsys):
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Tty(""))
    monkeypatch.setattr(down_cli, "CONFIRM", lambda prompt: "yes")
    assert main(["down", STACK, "--all"]) == 2
    assert "not confirmed (typed 'yes'); nothing was changed" in capsys.readouterr().err
    assert deployed["backend"].calls == []
    monkeypatch.setattr(down_cli, "CONFIRM", lambda prompt: STACK)
    assert main(["down", STACK, "--all", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["data"]["removed"] == [f"disk {deployed['volume']}", f"bucket {BUCKET}"]


def test_down_all_yes_removes_the_disk_and_every_version_of_the_bucket(deployed, capsys):
    assert main(["down", STACK, "--all", "--yes", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert data["removed"] == [f"disk {deployed['volume']}", f"bucket {BUCKET}"]
    assert data["stays"] == [] and data["monthlyUsd"] == 0.0
    assert deployed["ec2"].describe_volumes(Filters=[{"Name": "volume-id", "Values": [deployed["volume"]]}])[
        "Volumes"] == []
    assert BUCKET not in [b["Name"] for b in deployed["s3"].list_buckets()["Buckets"]]


def test_down_all_leaves_a_disk_that_is_not_this_stack_s(deployed, capsys):
    other = deployed["ec2"].create_volume(AvailabilityZone=ZONE, Size=10, TagSpecifications=[
        {"ResourceType": "volume", "Tags": _tags("someone-else")}])["VolumeId"]
    deployed["backend"].outputs_by_stack[STACK]["dataVolumeId"] = other
    assert main(["down", STACK, "--all", "--yes"]) == 1
    err = capsys.readouterr().err
    assert f"disk {other} is not tagged as stack {STACK}'s (gpulease:stack='someone-else'); it is left alone" in err
    assert deployed["ec2"].describe_volumes(VolumeIds=[other])["Volumes"]
    assert BUCKET in [b["Name"] for b in deployed["s3"].list_buckets()["Buckets"]]  # nothing after the refusal


def test_down_failed_destroy_is_incomplete_exit_3_and_says_what_is_left(deployed, capsys):
    deployed["backend"].destroy_failures = 1  # what it deleted before it failed is not known: incomplete, never 1 or 0
    assert main(["down", STACK]) == 3
    captured = capsys.readouterr()
    assert "pulumi destroy failed: DependencyViolation" in captured.err
    assert captured.out.splitlines()[0] == f"{STACK}: pulumi destroy failed part-way; the stack is partly destroyed"


def test_down_on_alicloud_prints_the_commands_for_all(review, monkeypatch, capsys):
    backend = RecordingBackend(stacks={"ali-lora-7b": StackInfo("ali-lora-7b")}, outputs_by_stack={
        "ali-lora-7b": {"dataVolumeId": "d-bp1abc", "bucket": "gpulease-ali-ckpt", "instanceId": "i-bp1x"}})
    monkeypatch.setattr(deploy, "BACKEND", lambda: backend)
    assert main(["down", "ali-lora-7b", "--all", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "to remove on Alibaba Cloud: aliyun ecs DeleteDisk --DiskId d-bp1abc" in out
    assert Path  # the commands are printed, nothing is removed from here


def _spot_request(ec2: Any, stack: str = STACK) -> str:
    """A live persistent request tagged as the stack's (what the stack's aws.ec2.Tag resources give it)."""
    from tests.support.inventory import IMAGE
    answer = ec2.request_spot_instances(
        InstanceCount=1, Type="persistent", InstanceInterruptionBehavior="stop",
        LaunchSpecification={"ImageId": IMAGE, "InstanceType": "g5.xlarge", "Placement": {"AvailabilityZone": ZONE}},
        TagSpecifications=[{"ResourceType": "spot-instances-request", "Tags": _tags(stack)}])
    return answer["SpotInstanceRequests"][0]["SpotInstanceRequestId"]


def _live(ec2: Any) -> list[str]:
    found = ec2.describe_spot_instance_requests(Filters=[{"Name": "state", "Values": ["open", "active", "disabled"]}])
    return sorted(r["SpotInstanceRequestId"] for r in found["SpotInstanceRequests"])


def test_down_cancels_the_stack_s_spot_requests_before_the_destroy(deployed, capsys):
    """The destroy's own cancel (the provider's) is not relied on: the stack's requests, found by their tags, are
    cancelled first; another stack's are left alone."""
    ec2 = deployed["ec2"]
    ours, theirs = _spot_request(ec2), _spot_request(ec2, "someone-else")
    assert main(["down", STACK]) == 0
    assert _live(ec2) == [theirs]
    assert ours not in _live(ec2)
    assert deployed["backend"].ops() == ["outputs", "destroy"]


def test_down_fails_when_a_spot_request_is_still_open_after_the_destroy(deployed, monkeypatch, capsys):
    ec2 = deployed["ec2"]
    ours = _spot_request(ec2)
    monkeypatch.setattr(teardown, "cancel_with_strays", lambda client, stack, tracked: ([], []))  # a cancel that did nothing
    assert main(["down", STACK]) == 1
    err = capsys.readouterr().err
    assert f"stack {STACK!r}: destroyed, but its spot request(s) {ours} are still open and may launch an instance" in err
    assert f"aws ec2 cancel-spot-instance-requests --region us-east-1 --spot-instance-request-ids {ours}" in err


def test_down_of_a_stack_whose_file_no_longer_recovers_still_ends_its_live_requests(aws, review, monkeypatch, capsys):
    """The file says on-demand now (aws-debug-t4), but a persistent request an earlier `up` made is live under the
    stack's tags and has launched an instance the stack does not track: down cancels it and terminates that one, and
    checks again after the destroy."""
    stack = "aws-debug-t4"
    ec2, s3 = aws.client("ec2"), aws.client("s3")
    request = _spot_request(ec2, stack)
    stray = _held_by(ec2, request)
    backend = RecordingBackend(stacks={stack: StackInfo(stack)}, outputs_by_stack={stack: {"instanceId": "i-0tracked"}})
    monkeypatch.setattr(deploy, "BACKEND", lambda: backend)
    monkeypatch.setattr(teardown, "CLIENTS", lambda region, creds: (ec2, s3))
    assert main(["down", stack]) == 0
    assert _live(ec2) == [] and _state(ec2, stray) == "terminated"
    checked = []
    monkeypatch.setattr(teardown, "aws_open_spot_requests", lambda client, name: checked.append(name) or [])
    assert main(["down", stack]) == 0
    assert checked == [stack]  # the check after the destroy runs on an on-demand stack too


def _held_by(ec2: Any, rid: str) -> str:
    [held] = ec2.describe_spot_instance_requests(SpotInstanceRequestIds=[rid])["SpotInstanceRequests"]
    return held["InstanceId"]


def _state(ec2: Any, instance: str) -> str:
    return ec2.describe_instances(InstanceIds=[instance])["Reservations"][0]["Instances"][0]["State"]["Name"]


def test_down_terminates_what_a_re_opened_request_launched_outside_the_stack(deployed, capsys):
    """A persistent request whose instance was terminated outside the kit re-opened and launched an untagged one:
    down cancels the request and terminates that instance; the instance the stack tracks is left to the destroy."""
    ec2, backend = deployed["ec2"], deployed["backend"]
    tracked_request, stray_request = _spot_request(ec2), _spot_request(ec2)
    tracked, stray = _held_by(ec2, tracked_request), _held_by(ec2, stray_request)
    backend.outputs_by_stack[STACK] = {**backend.outputs_by_stack[STACK], "instanceId": tracked}
    assert main(["down", STACK, "--json"]) == 0
    assert _live(ec2) == []
    assert (_state(ec2, stray), _state(ec2, tracked)) == ("terminated", "running")
