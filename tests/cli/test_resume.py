"""``gpulease resume``: a stopped instance started again through the cloud's API (the Alibaba Cloud stub, moto on
127.0.0.1), a gone one recreated by ``pulumi up --refresh`` (the recording stand-in), and refusals with nothing
changed: a stack that is not spot, a deadline passed or unreadable, no credentials."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from gpulease.cli.main import main
from gpulease.core import vocabulary as v
from gpulease.lifecycle import deploy, resume_clouds, verdict
from gpulease.lifecycle.resume_clouds import SPOT_INTERRUPTION_STOP, AwsFleet, ResumeCloudError
from tests.support.alicloud_inventory import REGION as ALI_REGION
from tests.support.alicloud_inventory import offline_credentials
from tests.support.clock import live_now
from tests.support.ephemeral import OUTPUTS, RecordingBackend
from tests.support.inventory import IMAGE

ALI_STACK = "ali-lora-7b"  # cn-hangzhou, spot, one experiment llama7b-lora-ali
AWS_STACK = "aws-lora-7b"  # us-east-1, spot
ON_DEMAND = "ali-debug-t4"
EXPERIMENT = "llama7b-lora"  # the one experiment of both spot stacks


def _tags(stack: str, deadline: str, **extra: str) -> dict[str, str]:
    return {v.TAG_MANAGED_BY: v.MANAGED_BY_VALUE, v.TAG_STACK: stack, v.TAG_EXPIRES_AT: deadline,
            v.TAG_EXPERIMENT: EXPERIMENT, **extra}


def _in(hours: float) -> str:
    return v.rfc3339(live_now() + timedelta(hours=hours))


def _json(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def no_deploy(monkeypatch: pytest.MonkeyPatch) -> RecordingBackend:
    """A recording backend and a passing review: a test that must not deploy asserts no ``up`` was recorded."""
    found = RecordingBackend()
    for stack in (ALI_STACK, AWS_STACK):  # deployed, with a recorded deadline six hours away
        found.ensure(stack)
        found.outputs_by_stack[stack] = {**OUTPUTS, "deadline": _in(6)}
    found.calls.clear()
    monkeypatch.setattr(deploy, "BACKEND", lambda: found)
    monkeypatch.setattr(verdict, "REVIEW", lambda path, stack: verdict.Verdict(
        stack=stack, status="pass", hourly_usd=0.35, worst_case="$2.80", budget_usd=40.0))
    return found


def _last_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The refusal or failure: the last line on stderr (progress lines come before it), never a traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


def _ali_calls(ali: Any, action: str) -> list[dict[str, str]]:
    return [params for name, params in ali.stub.calls if name == action]


# --- Alibaba Cloud -----------------------------------------------------------------------------------------------


RECLAIMED = ("Recycling",)  # the OperationLocks reason of a reclaimed preemptible instance


def test_alicloud_starts_the_stopped_instance_of_its_own_stack_only(ali, no_deploy, capsys):
    mine = ali.account.add_instance(ALI_REGION, _tags(ALI_STACK, _in(6)), status="Stopped", spot=True, locks=RECLAIMED)
    other = ali.account.add_instance(ALI_REGION, _tags("someone-elses", _in(6)), status="Stopped", spot=True,
                                     locks=RECLAIMED)
    unmanaged = ali.account.add_instance(ALI_REGION, {v.TAG_STACK: ALI_STACK}, status="Stopped", spot=True,
                                         locks=RECLAIMED)
    assert main(["resume", ALI_STACK, "--json"]) == 0
    doc = _json(capsys)
    assert doc["ok"] is True and doc["data"]["started"] == [mine] and doc["data"]["redeployed"] is False
    assert ali.account.instances[mine].status == "Running"
    assert ali.account.instances[other].status == "Stopped" and ali.account.instances[unmanaged].status == "Stopped"
    assert [c["InstanceId"] for c in _ali_calls(ali, "StartInstance")] == [mine]
    assert no_deploy.ops() == ["outputs"]


def test_alicloud_running_instance_is_left_alone(ali, no_deploy, capsys):
    iid = ali.account.add_instance(ALI_REGION, _tags(ALI_STACK, _in(6)), status="Running", spot=True)
    assert main(["resume", ALI_STACK]) == 0
    assert f"{iid} is running already" in capsys.readouterr().out
    assert _ali_calls(ali, "StartInstance") == [] and no_deploy.ops() == ["outputs"]


@pytest.mark.parametrize("deadline", [-1.0, 0.05, "soon", ""])  # hours from now (ids fixed for xdist), or text
def test_alicloud_passed_or_unreadable_deadline_starts_nothing(ali, no_deploy, capsys, deadline):
    deadline = _in(deadline) if isinstance(deadline, float) else deadline
    iid = ali.account.add_instance(ALI_REGION, _tags(ALI_STACK, deadline), status="Stopped", spot=True,
                                   locks=RECLAIMED)
    assert main(["resume", ALI_STACK]) == 2
    err = _last_line(capsys)
    assert err.startswith(f"gpulease: stack '{ALI_STACK}': ")
    assert ("has passed" in err) if deadline.startswith("2") else ("no readable deadline" in err)
    assert "deadlineRenewal" in err
    assert ali.account.instances[iid].status == "Stopped"
    assert _ali_calls(ali, "StartInstance") == [] and no_deploy.ops() == ["outputs"]


def test_alicloud_no_stock_is_one_line_exit_1(ali, no_deploy, capsys):
    iid = ali.account.add_instance(ALI_REGION, _tags(ALI_STACK, _in(6)), status="Stopped", spot=True, locks=RECLAIMED)
    ali.stub.faults.add("StartInstance", 10, "OperationDenied.NoStock", 403)
    assert main(["resume", ALI_STACK]) == 1
    err = _last_line(capsys)
    assert err.startswith("gpulease: ") and f"starting {iid} failed" in err and "NoStock" in err
    assert f"gpulease resume {ALI_STACK} again later" in err
    assert ali.account.instances[iid].status == "Stopped"


def test_alicloud_without_credentials_fails_closed(ali, no_deploy, monkeypatch, capsys):
    iid = ali.account.add_instance(ALI_REGION, _tags(ALI_STACK, _in(6)), status="Stopped", spot=True)
    offline_credentials(monkeypatch, keys=False)
    assert main(["resume", ALI_STACK]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Alibaba Cloud credentials" in err and "Traceback" not in err
    assert ali.account.instances[iid].status == "Stopped" and ali.stub.calls == []


def test_an_on_demand_stack_is_refused_before_any_call(ali, no_deploy, capsys):
    assert main(["resume", ON_DEMAND]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is not spot" in err and "market: on-demand" in err
    assert f"Pulumi.{ON_DEMAND}.yaml" in err
    assert ali.stub.calls == [] and no_deploy.ops() == []


def test_a_gone_instance_is_recreated_by_pulumi_up_with_refresh(ali, no_deploy, capsys):
    assert main(["resume", ALI_STACK, "--json"]) == 0
    doc = _json(capsys)
    assert doc["data"]["redeployed"] is True and doc["data"]["started"] == []
    assert "up" in no_deploy.ops() and no_deploy.refreshes == [True]


def test_a_gone_instance_past_its_recorded_deadline_is_not_recreated(ali, no_deploy, capsys):
    no_deploy.ensure(ALI_STACK)
    no_deploy.outputs_by_stack[ALI_STACK] = {**OUTPUTS, "deadline": _in(-2)}
    assert main(["resume", ALI_STACK]) == 2
    assert "has passed" in capsys.readouterr().err
    assert "up" not in no_deploy.ops()


def test_a_stack_never_deployed_is_refused(ali, no_deploy, capsys):
    no_deploy.remove(ALI_STACK)
    assert main(["resume", ALI_STACK]) == 2
    assert f"is not deployed; nothing was changed; accepted: gpulease up {ALI_STACK}" in capsys.readouterr().err
    assert "up" not in no_deploy.ops()


# --- AWS ---------------------------------------------------------------------------------------------------------


def _aws_instance(aws: Any, stack: str, deadline: str) -> str:
    ec2 = aws.client("ec2")
    tags = [{"Key": k, "Value": val} for k, val in _tags(stack, deadline).items()]
    found = ec2.run_instances(ImageId=IMAGE, MinCount=1, MaxCount=1, InstanceType="g5.xlarge",
                              TagSpecifications=[{"ResourceType": "instance", "Tags": tags}])
    return found["Instances"][0]["InstanceId"]


def _state(aws: Any, iid: str) -> str:
    ec2 = aws.client("ec2")
    return ec2.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]["State"]["Name"]


def test_aws_starts_a_stopped_instance_through_start_instances(aws, no_deploy, capsys):
    iid = _aws_instance(aws, AWS_STACK, _in(6))
    other = _aws_instance(aws, "another-stack", _in(6))
    ec2 = aws.client("ec2")
    ec2.stop_instances(InstanceIds=[iid, other])
    assert main(["resume", AWS_STACK, "--json"]) == 0
    assert _json(capsys)["data"]["started"] == [iid]
    assert _state(aws, iid) == "running" and _state(aws, other) == "stopped"
    assert no_deploy.ops() == ["outputs"]


def test_aws_past_deadline_refused(aws, no_deploy, capsys):
    iid = _aws_instance(aws, AWS_STACK, _in(-1))
    ec2 = aws.client("ec2")
    ec2.stop_instances(InstanceIds=[iid])
    assert main(["resume", AWS_STACK]) == 2
    assert "has passed" in capsys.readouterr().err
    assert _state(aws, iid) == "stopped"


class _Ec2:
    """describe_instances answers from a script; start_instances records."""

    def __init__(self, pages: list[dict[str, Any]]):
        self.pages, self.started, self.asked = pages, [], 0

    def describe_instances(self, **kwargs: Any) -> dict[str, Any]:
        self.asked += 1
        return self.pages[min(self.asked - 1, len(self.pages) - 1)]

    def start_instances(self, InstanceIds: list[str]) -> dict[str, Any]:  # noqa: N803 (boto3's name)
        self.started += InstanceIds
        return {}


def _interrupted(iid: str, deadline: str) -> dict[str, Any]:
    return {"InstanceId": iid, "State": {"Name": "stopped"}, "InstanceLifecycle": "spot",
            "StateReason": {"Code": SPOT_INTERRUPTION_STOP, "Message": "Server.SpotInstanceShutdown: ..."},
            "Tags": [{"Key": k, "Value": val} for k, val in _tags(AWS_STACK, deadline).items()]}


def test_aws_instance_stopped_by_a_spot_interruption_is_left_to_ec2(no_deploy, monkeypatch, capsys):
    item = {**_interrupted("i-0interrupted00000", _in(6)), "SpotInstanceRequestId": "sir-0open"}
    ec2 = _Ec2Requests([{"Reservations": [{"Instances": [item]}]}],
                       [{"SpotInstanceRequestId": "sir-0open", "State": "disabled", "Status": {}}])
    monkeypatch.setitem(resume_clouds.FLEETS, "aws", lambda region: AwsFleet(ec2))
    assert main(["resume", AWS_STACK]) == 0
    assert "EC2 starts it again when capacity returns" in capsys.readouterr().out
    assert ec2.started == [] and no_deploy.ops() == ["outputs"]


def test_a_listing_that_never_ends_is_refused_without_starting(no_deploy, monkeypatch, capsys):
    page = {"Reservations": [], "NextToken": "again"}
    ec2 = _Ec2([page])
    monkeypatch.setitem(resume_clouds.FLEETS, "aws", lambda region: AwsFleet(ec2))
    with pytest.raises(ResumeCloudError):
        AwsFleet(ec2).find(AWS_STACK)
    assert ec2.asked == resume_clouds.MAX_PAGES
    assert main(["resume", AWS_STACK]) == 1
    assert "went on past 5 pages" in capsys.readouterr().err and ec2.started == []


# --- the stack argument and the Automation API ---------------------------------------------------------------


def test_a_stack_file_of_another_project_or_not_a_file_is_refused(ali, no_deploy, tmp_path, capsys):
    import shutil

    from gpulease.review import stacks

    root = tmp_path / "other"
    (root / "stacks").mkdir(parents=True)
    (root / "Pulumi.yaml").write_text("name: otherproj\nruntime: python\n")
    path = root / "stacks" / f"Pulumi.{ALI_STACK}.yaml"
    shutil.copy(stacks.PROJECT_ROOT / "stacks" / f"Pulumi.{ALI_STACK}.yaml", path)
    assert main(["resume", str(path)]) == 2
    assert "not a stack of this project" in _last_line(capsys)
    folder = tmp_path / "Pulumi.dir.yaml"
    folder.mkdir()
    assert main(["resume", str(folder)]) == 2
    assert _last_line(capsys).startswith("gpulease: ")
    assert ali.stub.calls == [] and no_deploy.ops() == []


def test_the_automation_backend_runs_up_with_refresh(monkeypatch):
    from gpulease.ephemeral import backend as automation

    seen: dict[str, Any] = {}

    class Stack:
        def up(self, **kwargs: Any) -> Any:
            seen.update(kwargs)
            return type("R", (), {"summary": type("S", (), {"resource_changes": {"update": 1}})()})()

    made = deploy.default_backend()
    monkeypatch.setattr(automation.AutomationBackend, "_select", lambda self, stack: Stack())
    made.up(ALI_STACK, print, print, refresh=True)
    assert seen["refresh"] is True
    made.up(ALI_STACK, print, print)
    assert seen["refresh"] is None  # a plain gpulease up: the Automation API's own default


# --- cloud errors: one line, exit 1, the envelope with --json ------------------------------------------------


class _Raising(_Ec2):
    def __init__(self, exc: BaseException):
        super().__init__([{}])
        self.exc = exc

    def describe_instances(self, **kwargs: Any) -> dict[str, Any]:
        raise self.exc


def _client_error(code: str, message: str, op: str = "DescribeInstances") -> Exception:
    import botocore.exceptions

    return botocore.exceptions.ClientError({"Error": {"Code": code, "Message": message}}, op)


def _endpoint_error() -> Exception:
    import botocore.exceptions

    return botocore.exceptions.EndpointConnectionError(endpoint_url="https://ec2.us-east-1.amazonaws.com")


@pytest.mark.parametrize(("exc", "said"), [
    (lambda: _client_error("RequestLimitExceeded", "Request limit exceeded."), "RequestLimitExceeded: Request limit"),
    (lambda: _client_error("InternalError", "An internal error has occurred"), "InternalError: An internal error"),
    (_endpoint_error, "Could not connect to the endpoint URL"),
])
@pytest.mark.parametrize("as_json", [False, True])
def test_aws_listing_errors_are_one_line_exit_1(no_deploy, monkeypatch, capsys, exc, said, as_json):
    monkeypatch.setitem(resume_clouds.FLEETS, "aws", lambda region: AwsFleet(_Raising(exc())))
    assert main(["resume", AWS_STACK, *(["--json"] if as_json else [])]) == 1
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    line = out.err.strip().splitlines()[-1]
    assert line.startswith(f"gpulease: DescribeInstances for stack '{AWS_STACK}' failed: ") and said in line
    if as_json:
        doc = json.loads(out.out)
        assert doc["ok"] is False and doc["data"] is None
        assert doc["errors"] == [{"code": "resume-failed", "message": line.removeprefix("gpulease: ")}]
    else:
        assert out.out == ""
    assert no_deploy.ops() == ["outputs"]


def test_aws_missing_credentials_stay_the_users_line(no_deploy, monkeypatch, capsys):
    import botocore.exceptions

    monkeypatch.setitem(resume_clouds.FLEETS, "aws",
                        lambda region: AwsFleet(_Raising(botocore.exceptions.NoCredentialsError())))
    assert main(["resume", AWS_STACK]) == 2
    assert "no usable AWS credentials" in _last_line(capsys)


def test_aws_start_refused_is_one_line_exit_1(no_deploy, monkeypatch, capsys):
    class Refusing(_Ec2):
        def start_instances(self, InstanceIds: list[str]) -> dict[str, Any]:  # noqa: N803
            raise _client_error("InsufficientInstanceCapacity", "no capacity", "StartInstances")

    item = {"InstanceId": "i-0stopped", "State": {"Name": "stopped"}, "InstanceLifecycle": "spot",
            "StateReason": {"Code": "Client.UserInitiatedShutdown"},
            "Tags": [{"Key": k, "Value": val} for k, val in _tags(AWS_STACK, _in(6)).items()]}
    monkeypatch.setitem(resume_clouds.FLEETS, "aws", lambda region: AwsFleet(Refusing([{"Reservations": [
        {"Instances": [item]}]}])))
    assert main(["resume", AWS_STACK, "--json"]) == 1
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "InsufficientInstanceCapacity: no capacity" in out.err.splitlines()[-1]
    assert json.loads(out.out)["errors"][0]["code"] == "resume-failed"


@pytest.mark.parametrize(("code", "status"), [("Throttling.User", 400), ("InternalError", 500)])
def test_alicloud_listing_errors_are_one_line_exit_1(ali, no_deploy, capsys, code, status):
    iid = ali.account.add_instance(ALI_REGION, _tags(ALI_STACK, _in(6)), status="Stopped", spot=True, locks=RECLAIMED)
    ali.stub.faults.add("DescribeInstances", 100, code, status)
    assert main(["resume", ALI_STACK, "--json"]) == 1
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    line = out.err.strip().splitlines()[-1]
    assert line.startswith(f"gpulease: DescribeInstances for stack '{ALI_STACK}' failed: {code}")
    assert json.loads(out.out)["errors"][0]["code"] == "resume-failed"
    assert ali.account.instances[iid].status == "Stopped" and _ali_calls(ali, "StartInstance") == []


@pytest.mark.parametrize("mode", ["StopCharging", "KeepCharging"])
def test_alicloud_stop_fields_are_shown_but_never_taken_for_a_reclaim(ali, no_deploy, capsys, mode: str):
    """StoppedMode=StopCharging and SpotInterruptionBehavior=Stop are what the watchdog's own stop shows too."""
    iid = ali.account.add_instance(ALI_REGION, _tags(ALI_STACK, _in(6)), status="Stopped", spot=True,
                                   stop={"StoppedMode": mode, "SpotInterruptionBehavior": "Stop"})
    assert main(["resume", ALI_STACK]) == 2
    assert _last_line(capsys) == (
        f"gpulease: stack '{ALI_STACK}': {iid} stopped, but alicloud does not show a reclaim (no OperationLocks "
        f"LockReason Recycling); it shows {iid}: StoppedMode={mode}, SpotInterruptionBehavior=Stop, which the "
        "watchdog's own stop shows too: the watchdog stops its own instance at its deadline, idle or budget end; "
        f"nothing was started; accepted: a reclaimed instance; to run again on purpose, gpulease up {ALI_STACK}")
    assert _ali_calls(ali, "StartInstance") == []


def test_alicloud_stop_fields_that_are_not_words_are_not_echoed() -> None:
    from gpulease.lifecycle.resume_clouds import _stop_detail
    assert _stop_detail({"StoppedMode": "Stop\x1b[2JCharging", "SpotInterruptionBehavior": "x" * 41}) == (
        "StoppedMode=(unreadable), SpotInterruptionBehavior=(unreadable)")
    assert _stop_detail({"StoppedMode": "Not-applicable"}) == "StoppedMode=Not-applicable"
    assert _stop_detail({}) is None


# --- whose instances: the stack's experiments, the stack's recorded deadline ------------------------------------


def test_a_foreign_instance_with_the_stacks_tags_is_not_started_nor_counted(aws, no_deploy, capsys):
    ec2 = aws.client("ec2")
    tags = [{"Key": k, "Value": val} for k, val in
            _tags(AWS_STACK, "2099-01-01T00:00:00Z", **{v.TAG_EXPERIMENT: "not-ours"}).items()]
    foreign = ec2.run_instances(ImageId=IMAGE, MinCount=1, MaxCount=1, InstanceType="t2.micro",
                                TagSpecifications=[{"ResourceType": "instance", "Tags": tags}])["Instances"][0]["InstanceId"]
    ec2.stop_instances(InstanceIds=[foreign])
    assert main(["resume", AWS_STACK, "--json"]) == 0
    data = _json(capsys)["data"]
    assert data["foreign"] == [foreign] and data["started"] == []
    assert _state(aws, foreign) == "stopped"
    assert data["redeployed"] is True  # the stack's own instance is gone: the foreign one never stands in for it
    assert "up" in no_deploy.ops()


def test_the_stacks_recorded_deadline_holds_over_an_instances_own_tag(aws, no_deploy, capsys):
    iid = _aws_instance(aws, AWS_STACK, "2099-01-01T00:00:00Z")
    aws.client("ec2").stop_instances(InstanceIds=[iid])
    no_deploy.outputs_by_stack[AWS_STACK]["deadline"] = _in(-1)
    assert main(["resume", AWS_STACK]) == 2
    assert "(the stack's outputs) has passed" in _last_line(capsys)
    assert _state(aws, iid) == "stopped"


# --- Alibaba Cloud: a stop the watchdog made on purpose stays ---------------------------------------------------


def test_alicloud_instance_stopped_without_a_reclaim_is_refused(ali, no_deploy, capsys):
    iid = ali.account.add_instance(ALI_REGION, _tags(ALI_STACK, _in(6)), status="Stopped", spot=True)
    assert main(["resume", ALI_STACK]) == 2
    err = _last_line(capsys)
    assert err.startswith(f"gpulease: stack '{ALI_STACK}': {iid} stopped, but alicloud does not show a reclaim")
    assert "LockReason Recycling" in err and "nothing was started" in err
    assert ali.account.instances[iid].status == "Stopped" and _ali_calls(ali, "StartInstance") == []


# --- AWS: an interrupted instance whose request ended ----------------------------------------------------------


class _Ec2Requests(_Ec2):
    def __init__(self, pages: list[dict[str, Any]], requests: list[dict[str, Any]]):
        super().__init__(pages)
        self.requests, self.asked_requests = requests, []

    def describe_spot_instance_requests(self, SpotInstanceRequestIds: list[str]) -> dict[str, Any]:  # noqa: N803
        self.asked_requests.append(SpotInstanceRequestIds)
        return {"SpotInstanceRequests": self.requests}


@pytest.mark.parametrize(("request_", "said"), [
    ({"State": "cancelled", "Status": {"Code": "request-canceled-and-instance-running"}},
     "sir-0abc cancelled (request-canceled-and-instance-running) at 2026-12-01T00:00:00Z"),
    ({"State": "open", "ValidUntil": "past"}, "sir-0abc valid only until 2026-11-30T00:00:00Z"),
])
def test_aws_interrupted_instance_whose_request_ended_is_told_so(no_deploy, monkeypatch, capsys, request_, said):
    from datetime import UTC, datetime

    request_ = {**request_, "SpotInstanceRequestId": "sir-0abc"}
    request_.setdefault("Status", {})["UpdateTime"] = datetime(2026, 12, 1, tzinfo=UTC)
    if request_.get("ValidUntil") == "past":
        request_["ValidUntil"] = datetime(2026, 11, 30, tzinfo=UTC)
    item = {**_interrupted("i-0interrupted00000", _in(6)), "SpotInstanceRequestId": "sir-0abc"}
    ec2 = _Ec2Requests([{"Reservations": [{"Instances": [item]}]}], [request_])
    monkeypatch.setitem(resume_clouds.FLEETS, "aws", lambda region: AwsFleet(ec2))
    assert main(["resume", AWS_STACK]) == 0
    out = capsys.readouterr().out
    assert out == (f"{AWS_STACK}: i-0interrupted00000 was stopped by a spot interruption and its request ended "
                   f"({said}): EC2 will not start it again; the deadline schedule terminates it; the data disk is "
                   "kept\n")
    assert ec2.asked_requests == [["sir-0abc"]] and ec2.started == [] and no_deploy.ops() == ["outputs"]
