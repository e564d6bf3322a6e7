"""``gpulease up``: the review first (a refusal deploys nothing), ``pulumi up`` through the ephemeral stacks'
recording stand-in for the Automation API, the next zone or type the spec allows on a capacity error at first
creation (never away from a disk it created), then the instance's ready and verify records in a moto bucket."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.image_bake import control_folder
from gpulease.cli.main import main
from gpulease.core.catalog import load_catalog
from gpulease.ephemeral.backend import StackInfo
from gpulease.lifecycle import capacity, deploy, verdict
from gpulease.review import stacks
from tests.support.channel import BoundedChannel
from tests.support.ephemeral import OUTPUTS, RecordingBackend

STACK = "aws-lora-7b"  # us-east-1, gpu {gpuMemoryGb: 24, count: 1}, spot, verify maxMinutes 20
IID = OUTPUTS["instanceId"]
BUCKET = "gpulease-bucket"  # OUTPUTS' checkpointUri: s3://gpulease-bucket/ckpt/
NO_CAPACITY = RuntimeError("error: creating EC2 Instance: operation error EC2: RunInstances, api error "
                           "InsufficientInstanceCapacity: We currently do not have sufficient g6.xlarge capacity")
DISK = ("aws:ebs/volume:Volume", "llama7b-lora-data")


@pytest.fixture
def passing_review(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []

    def fake(path: Path, stack: str) -> verdict.Verdict:
        seen.append(stack)
        return verdict.Verdict(stack=stack, status="pass", hourly_usd=0.35, worst_case="$2.80", budget_usd=40.0)

    monkeypatch.setattr(verdict, "REVIEW", fake)
    monkeypatch.setattr(capacity, "REVIEW_PINNED", lambda path, stack, overrides: fake(path, stack))
    return seen


@pytest.fixture
def backend(monkeypatch: pytest.MonkeyPatch) -> RecordingBackend:
    found = RecordingBackend()
    monkeypatch.setattr(deploy, "BACKEND", lambda: found)
    monkeypatch.setattr(capacity, "ZONES", {"aws": lambda region: lambda itype: ["us-east-1a", "us-east-1b"]})
    return found


@pytest.fixture
def bucket(aws, monkeypatch: pytest.MonkeyPatch) -> Any:
    s3 = aws.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    monkeypatch.setattr(deploy, "CHANNEL", lambda cloud, region: BoundedChannel(s3))
    return s3


def _report(s3: Any, name: str, body: dict[str, Any]) -> None:
    s3.put_object(Bucket=BUCKET, Key=f"{control_folder('ckpt/')}{name}", Body=json.dumps(body).encode())


def _json(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    return json.loads(capsys.readouterr().out)


def test_up_reviews_deploys_with_the_pack_waits_for_ready_and_verify(passing_review, backend, bucket, capsys):
    _report(bucket, "ready.json", {"instanceId": IID, "ready": True, "failed": [], "time": "2026-12-01T10:00:00Z"})
    _report(bucket, "verify.json", {"instanceId": IID, "passed": True, "failed": [], "checks": {}})
    assert main(["up", STACK, "--json"]) == 0
    doc = _json(capsys)
    assert doc["ok"] is True and doc["data"]["connect"] == f"gpulease ssh {STACK}"
    assert doc["data"]["ready"]["instanceId"] == IID and doc["data"]["verify"]["passed"] is True
    assert doc["data"]["tries"] == [{"choice": "as the stack file says", "outcome": "ok", "changes": {"create": 4}}]
    assert passing_review == [STACK]
    assert backend.ops() == ["outputs", "ensure", "up", "outputs"] and backend.config_files == [None]


def test_the_automation_backend_passes_the_pack_and_the_config_file(monkeypatch):
    from gpulease.ephemeral import backend as automation

    seen: dict[str, Any] = {}

    class Stack:
        def up(self, **kwargs: Any) -> Any:
            seen.update(kwargs)
            return type("R", (), {"summary": type("S", (), {"resource_changes": {"create": 1}})()})()

    made = deploy.default_backend()
    assert made.policy_packs == [str(stacks.PROJECT_ROOT / "policies")]
    monkeypatch.setattr(automation.AutomationBackend, "_select", lambda self, stack: Stack())
    made.up(STACK, print, print, config_file="/tmp/pinned.yaml")
    assert seen["policy_packs"] == [str(stacks.PROJECT_ROOT / "policies")]
    assert seen["config_file"] == "/tmp/pinned.yaml"


def test_up_and_down_refuse_a_stack_file_of_another_project_and_run_nothing(backend, tmp_path, capsys):
    """pulumi runs in this project's folder: a file of another project would be reviewed there, deployed here."""
    root = tmp_path / "other"
    (root / "stacks").mkdir(parents=True)
    (root / "Pulumi.yaml").write_text("name: otherproj\nruntime: python\n")
    path = root / "stacks" / f"Pulumi.{STACK}.yaml"
    shutil.copy(stacks.PROJECT_ROOT / "stacks" / f"Pulumi.{STACK}.yaml", path)
    for command in (["up", str(path)], ["down", str(path)], ["down", str(path), "--all", "--yes"]):
        assert main(command) == 2
        assert "not a stack of this project" in capsys.readouterr().err
    assert backend.calls == []


def test_up_refuses_on_the_review_and_deploys_nothing(backend, tmp_path, capsys, monkeypatch):
    root = tmp_path / "proj"
    (root / "stacks").mkdir(parents=True)
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(stacks.PROJECT_ROOT / name, root / name)
    config = yaml.safe_load((stacks.PROJECT_ROOT / "stacks" / f"Pulumi.{STACK}.yaml").read_text())
    config["config"]["gpulease:experiment"]["budgetUsd"] = 1  # the worst case is far above it: mandatory
    path = root / "stacks" / "Pulumi.tight.yaml"
    path.write_text(yaml.safe_dump(config))
    monkeypatch.setattr(stacks, "PROJECT_ROOT", root)  # a stack of the project up runs pulumi in
    assert main(["up", str(path)]) == 1
    captured = capsys.readouterr()
    assert "review: FAIL" in captured.err and captured.out == ""  # progress and the verdict go to stderr
    assert captured.err.strip().splitlines()[-1] == ("gpulease: stack 'tight': the review says FAIL; nothing was deployed "
                                    "(`gpulease plan tight` shows why)")
    assert backend.calls == []


def test_up_refuses_a_partial_review(backend, monkeypatch, capsys):
    monkeypatch.setattr(verdict, "REVIEW", lambda path, stack: verdict.Verdict(stack=stack, status="partial"))
    assert main(["up", STACK]) == 1
    assert "the review says PARTIAL; nothing was deployed" in capsys.readouterr().err
    assert backend.calls == []


def test_capacity_error_tries_the_next_zone_pinned_for_that_update_only(passing_review, backend, bucket, capsys):
    backend.up_failures = [([], NO_CAPACITY)]
    before = (stacks.PROJECT_ROOT / "stacks" / f"Pulumi.{STACK}.yaml").read_text()
    pinned: list[dict[str, Any]] = []
    original_up = backend.up

    def up(stack, on_output, on_resource, *, config_file=None, stack_file=None):
        if config_file:
            pinned.append(json.loads(Path(config_file).read_text()))
        return original_up(stack, on_output, on_resource, config_file=config_file)

    backend.up = up  # type: ignore[method-assign]
    _report(bucket, "ready.json", {"instanceId": IID, "ready": True, "failed": []})
    _report(bucket, "verify.json", {"instanceId": IID, "passed": True, "failed": []})
    assert main(["up", STACK, "--json"]) == 0
    doc = _json(capsys)
    tries = doc["data"]["tries"]
    assert [t["outcome"] for t in tries] == ["InsufficientInstanceCapacity", "ok"]
    assert tries[1]["choice"].startswith("g6.xlarge in us-east-1b")
    exp = pinned[0]["config"]["gpulease:experiment"]
    # The requirements' GPU count stays: the program checks the pinned type against it.
    assert exp["gpu"] == {"instanceType": "g6.xlarge", "count": 1}
    assert exp["network"] == {"availabilityZone": "us-east-1b"}
    assert pinned[0]["config"]["aws:region"] == "us-east-1" and exp["budgetUsd"] == 40
    assert (stacks.PROJECT_ROOT / "stacks" / f"Pulumi.{STACK}.yaml").read_text() == before  # never written
    assert backend.config_files[0] is None and not Path(backend.config_files[1]).exists()  # removed after


def test_a_fallback_the_review_would_fail_on_its_budget_is_skipped_and_said(passing_review, backend, bucket,
                                                                             monkeypatch, capsys):
    backend.up_failures = [([], NO_CAPACITY)]
    over = ("worst-case cost $52.10 of 'llama7b-lora' ($6.51/h until each deadline, storage included) exceeds "
            "budgetUsd $40.00 (the gpulease:budgetUsd tag)")
    reviewed: list[str] = []

    def pinned(path, stack, overrides):
        itype = overrides["gpulease:experiment"]["gpu"]["instanceType"]
        zone = overrides["gpulease:experiment"]["network"]["availabilityZone"]
        reviewed.append(f"{itype} {zone}")
        if zone == "us-east-1b":
            return verdict.Verdict(stack=stack, status="fail", mandatory=[
                {"policy": "budget-worst-case", "resource": "llama7b-lora", "message": over}])
        return verdict.Verdict(stack=stack, status="pass")

    monkeypatch.setattr(capacity, "REVIEW_PINNED", pinned)
    _report(bucket, "ready.json", {"instanceId": IID, "ready": True, "failed": []})
    assert main(["up", STACK, "--no-wait", "--json"]) == 0
    said = capsys.readouterr()
    tries = json.loads(said.out)["data"]["tries"]
    assert reviewed[0] == "g6.xlarge us-east-1b"
    assert [t["choice"].split(" (")[0] for t in tries][1:] == [reviewed[1].replace(" ", " in ")]
    assert all(" in us-east-1b" not in t["choice"] for t in tries[1:])
    assert "skipping g6.xlarge in us-east-1b ($0." in said.err
    assert f"the review would refuse it (budget-worst-case: {over})" in said.err


def test_capacity_error_after_a_disk_was_made_stays_in_its_zone(passing_review, backend, bucket, capsys):
    backend.up_failures = [([DISK], NO_CAPACITY), ([], NO_CAPACITY)]
    _report(bucket, "ready.json", {"instanceId": IID, "ready": True, "failed": []})
    _report(bucket, "verify.json", {"instanceId": IID, "passed": True, "failed": []})
    assert main(["up", STACK, "--json"]) == 0
    tries = _json(capsys)["data"]["tries"]
    zones = [t["choice"].split(" in ")[1].split(" ")[0] for t in tries[1:]]
    assert zones == ["us-east-1a", "us-east-1a"]  # other types, never us-east-1b: the disk is in us-east-1a
    types = [t["choice"].split(" in ")[0] for t in tries[1:]]
    assert "g6.xlarge" not in types and len(set(types)) == 2


def test_capacity_tries_are_bounded(passing_review, backend, monkeypatch, capsys):
    zones = [f"us-east-1{z}" for z in "abcdef"]
    monkeypatch.setattr(capacity, "ZONES", {"aws": lambda region: lambda itype: zones})
    backend.up_failures = [([], NO_CAPACITY) for _ in range(20)]
    assert main(["up", STACK]) == 1
    assert backend.ops().count("up") == capacity.MAX_TRIES == 6
    assert capsys.readouterr().err.strip().endswith("6 tries made, the most gpulease up makes")


def test_capacity_error_when_the_spec_allows_nothing_else_says_so(passing_review, backend, tmp_path, capsys,
                                                                  monkeypatch):
    root = tmp_path / "proj"
    (root / "stacks").mkdir(parents=True)
    shutil.copy(stacks.PROJECT_ROOT / "Pulumi.yaml", root / "Pulumi.yaml")
    config = yaml.safe_load((stacks.PROJECT_ROOT / "stacks" / f"Pulumi.{STACK}.yaml").read_text())
    exp = config["config"]["gpulease:experiment"]
    exp["gpu"] = {"instanceType": "g5.xlarge"}
    exp["network"] = {"availabilityZone": "us-east-1c"}
    (root / "stacks" / "Pulumi.pinned.yaml").write_text(yaml.safe_dump(config))
    backend.up_failures = [([], NO_CAPACITY)]
    monkeypatch.setattr(stacks, "PROJECT_ROOT", root)  # a stack of the project up runs pulumi in
    assert main(["up", str(root / "stacks" / "Pulumi.pinned.yaml")]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    g5 = load_catalog().get("aws", "g5.xlarge")
    spot = g5.prices["us-east-1"] * (1 - g5.spot_discount)
    assert err == (f"gpulease: stack 'pinned': InsufficientInstanceCapacity for g5.xlarge in us-east-1c (${spot:.3f}/h); "
                   "the spec allows no other zone or type: gpu.instanceType names g5.xlarge only; the zone is fixed "
                   "by network.availabilityZone; accepted: gpu requirements or fit instead of instanceType, no "
                   "pinned zone, or another region")
    assert backend.ops().count("up") == 1


def test_capacity_error_on_a_stack_that_had_an_instance_is_not_retried(passing_review, backend, capsys):
    backend.stacks = {STACK: StackInfo(STACK)}
    backend.outputs_by_stack[STACK] = dict(OUTPUTS)
    backend.up_failures = [([], NO_CAPACITY)]
    assert main(["up", STACK]) == 1
    assert "no other zone or type is tried (the stack had an instance before this update)" in capsys.readouterr().err
    assert backend.ops().count("up") == 1


def test_up_other_failures_and_an_instance_that_does_not_report(passing_review, backend, bucket, capsys):
    backend.up_failures = [([], RuntimeError("error: AccessDenied: not authorized to perform ec2:RunInstances"))]
    assert main(["up", STACK, "--json"]) == 1
    doc = _json(capsys)
    assert doc["ok"] is False and doc["errors"][0]["code"] == "deploy-failed"
    assert "AccessDenied: not authorized to perform ec2:RunInstances" in doc["errors"][0]["message"]
    assert main(["up", STACK, "--wait", "0.001"]) == 1
    err = capsys.readouterr().err
    assert "is up but the instance did not report ready within 0.001 minutes" in err
    assert f"gpulease logs {STACK}" in err
    _report(bucket, "ready.json", {"instanceId": IID, "ready": False, "failed": ["gpu", "data"]})
    assert main(["up", STACK]) == 1
    assert "reported NOT ready: gpu, data failed" in capsys.readouterr().err


def test_up_help_lists_its_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["up", "--help"])
    out = capsys.readouterr().out
    assert "exit codes of this command:\n  0  up; the instance reported ready (and verified)\n  1  the review refused" in out
    assert "  2  a user mistake (one line on stderr, nothing changed)" in out


def _parked_stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The example stack moved to ``phase: parked`` in the user's folder (``gpulease up`` reads it from there)."""
    config = yaml.safe_load((stacks.PROJECT_ROOT / "stacks" / f"Pulumi.{STACK}.yaml").read_text())
    config["config"]["gpulease:experiment"]["phase"] = "parked"
    (tmp_path / "Pulumi.parked.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.chdir(tmp_path)
    return "parked"


def _spot_request(ec2: Any, stack: str) -> str:
    from gpulease.core import vocabulary as v
    from tests.support.inventory import IMAGE
    tags = [{"Key": v.TAG_MANAGED_BY, "Value": v.MANAGED_BY_VALUE}, {"Key": v.TAG_STACK, "Value": stack}]
    return ec2.request_spot_instances(
        InstanceCount=1, Type="persistent", InstanceInterruptionBehavior="stop",
        LaunchSpecification={"ImageId": IMAGE, "InstanceType": "g5.xlarge"},
        TagSpecifications=[{"ResourceType": "spot-instances-request", "Tags": tags}])["SpotInstanceRequests"][0][
        "SpotInstanceRequestId"]


def _live(ec2: Any) -> list[str]:
    found = ec2.describe_spot_instance_requests(Filters=[{"Name": "state", "Values": ["open", "active", "disabled"]}])
    return sorted(r["SpotInstanceRequestId"] for r in found["SpotInstanceRequests"])


def test_parking_cancels_the_stack_s_spot_requests_before_the_update(passing_review, backend, aws, tmp_path,
                                                                    monkeypatch, capsys):
    """Parking removes the instance, which re-opens a persistent request not cancelled first: up cancels the
    stack's own (by their tags) before pulumi up, another stack's stay."""
    from gpulease.lifecycle import spot_requests

    stack = _parked_stack(tmp_path, monkeypatch)
    ec2 = aws.client("ec2")
    monkeypatch.setattr(spot_requests, "CLIENT", lambda region, creds: ec2)
    ours, theirs = _spot_request(ec2, stack), _spot_request(ec2, "someone-else")
    seen: list[list[str]] = []
    real_up = backend.up

    def up(*args: Any, **kwargs: Any) -> Any:
        seen.append(_live(ec2))  # what is live when pulumi up runs
        return real_up(*args, **kwargs)

    monkeypatch.setattr(backend, "up", up)
    assert main(["up", stack, "--no-wait", "--json"]) == 0
    assert seen == [[theirs]] and _live(ec2) == [theirs] and ours not in _live(ec2)


def test_parking_fails_when_a_request_is_still_open_after_the_update(passing_review, backend, aws, tmp_path,
                                                                    monkeypatch, capsys):
    from gpulease.lifecycle import spot_requests

    stack = _parked_stack(tmp_path, monkeypatch)
    ec2 = aws.client("ec2")
    monkeypatch.setattr(spot_requests, "CLIENT", lambda region, creds: ec2)
    monkeypatch.setattr(spot_requests, "aws_cancel_spot_requests", lambda client, stack, experiments=None: [])  # a cancel that did nothing
    ours = _spot_request(ec2, stack)
    assert main(["up", stack]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == (f"gpulease: stack 'parked': parked, but its spot request(s) {ours} are still open and may launch an "
                   "instance; cancel them: aws ec2 cancel-spot-instance-requests --region us-east-1 "
                   f"--spot-instance-request-ids {ours}")


def test_parking_refuses_to_deploy_when_the_cancel_fails(passing_review, backend, tmp_path, monkeypatch, capsys):
    from gpulease.lifecycle import spot_requests

    stack = _parked_stack(tmp_path, monkeypatch)

    def broken(region: str, creds: Any) -> Any:
        raise RuntimeError("no credentials")

    monkeypatch.setattr(spot_requests, "CLIENT", broken)
    assert main(["up", stack]) == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "gpulease: stack 'parked': cancelling its spot requests before parking failed (RuntimeError: no "
        "credentials); nothing was deployed (gpulease up again)")
    assert "up" not in backend.ops()


SWEEP = {"config": {"aws:region": "us-east-1", "gpulease:sweep": {
    "base": {"name": "lora-rank", "owner": "alice@example.com", "project": "llm-finetune", "costCenter": "ml-research",
             "budgetUsd": 120, "gpu": {"gpuMemoryGb": 24}, "maxRuntimeHours": 6,
             "ssh": {"allowedCidrs": ["203.0.113.7/32"], "keyName": "alice-laptop"},
             "dataDisk": {"sizeGb": 100, "retain": True},
             "checkpoints": {"prefix": "sweeps/lora-rank/", "intervalMinutes": 20}},
    "runs": [{"name": "r8", "overrides": {"phase": "parked"}}, {"name": "r16", "overrides": {"tags": {"lora-rank": "16"}}}]}}}


def _sweep_request(ec2: Any, experiment: str | None, *, instance_of: str | None = None) -> str:
    """A live persistent request of stack ``sw``: tagged with its experiment (what the stack's tags give it now), or,
    made before it carried one, held by an instance tagged with ``instance_of``."""
    from gpulease.core import vocabulary as v
    from tests.support.inventory import IMAGE
    tags = [{"Key": v.TAG_MANAGED_BY, "Value": v.MANAGED_BY_VALUE}, {"Key": v.TAG_STACK, "Value": "sw"}]
    if experiment:
        tags.append({"Key": v.TAG_EXPERIMENT, "Value": experiment})
    rid = ec2.request_spot_instances(
        InstanceCount=1, Type="persistent", InstanceInterruptionBehavior="stop",
        LaunchSpecification={"ImageId": IMAGE, "InstanceType": "g5.xlarge"},
        TagSpecifications=[{"ResourceType": "spot-instances-request", "Tags": tags}])["SpotInstanceRequests"][0][
        "SpotInstanceRequestId"]
    if instance_of:
        [held] = [r["InstanceId"] for r in ec2.describe_spot_instance_requests(SpotInstanceRequestIds=[rid])[
            "SpotInstanceRequests"]]
        ec2.create_tags(Resources=[held], Tags=[{"Key": v.TAG_EXPERIMENT, "Value": instance_of}])
    return rid


def test_parking_one_sweep_run_cancels_only_that_runs_requests(passing_review, backend, aws, tmp_path, monkeypatch):
    """r8 parked, r16 training on spot: r8's requests (by their own tag, or an older one's by its instance's) are
    cancelled, r16's keep recovering."""
    from gpulease.lifecycle import spot_requests

    (tmp_path / "Pulumi.sw.yaml").write_text(yaml.safe_dump(SWEEP))
    monkeypatch.chdir(tmp_path)
    ec2 = aws.client("ec2")
    monkeypatch.setattr(spot_requests, "CLIENT", lambda region, creds: ec2)
    r8, r8_old = _sweep_request(ec2, "lora-rank-r8"), _sweep_request(ec2, None, instance_of="lora-rank-r8")
    r16, r16_old = _sweep_request(ec2, "lora-rank-r16"), _sweep_request(ec2, None, instance_of="lora-rank-r16")
    assert main(["up", "sw", "--no-wait", "--json"]) == 0
    assert _live(ec2) == sorted([r16, r16_old])
    assert r8 not in _live(ec2) and r8_old not in _live(ec2)


def test_the_after_check_of_a_sweep_parking_names_only_the_parked_runs_requests(passing_review, backend, aws, tmp_path,
                                                                                 monkeypatch, capsys):
    from gpulease.lifecycle import spot_requests

    (tmp_path / "Pulumi.sw.yaml").write_text(yaml.safe_dump(SWEEP))
    monkeypatch.chdir(tmp_path)
    ec2 = aws.client("ec2")
    monkeypatch.setattr(spot_requests, "CLIENT", lambda region, creds: ec2)
    monkeypatch.setattr(spot_requests, "aws_cancel_spot_requests", lambda client, stack, experiments=None: [])
    r8, r16 = _sweep_request(ec2, "lora-rank-r8"), _sweep_request(ec2, "lora-rank-r16")
    assert main(["up", "sw", "--no-wait"]) == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"gpulease: stack 'sw': parked, but its spot request(s) {r8} are still open and may launch an instance; "
        f"cancel them: aws ec2 cancel-spot-instance-requests --region us-east-1 --spot-instance-request-ids {r8}")
    assert r16 in _live(ec2)
