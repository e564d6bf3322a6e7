"""The spot instance's before_delete hook: bound to the instance by name, and its cancel run on moto's EC2
(127.0.0.1): the request cancelled, a request EC2 no longer knows let through, any other failure refusing the
delete."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from components.aws import spot_hook
from tests.support.inventory import IMAGE, REGION, MotoAws
from tests.support.specs import experiment, render_experiment

INSTANCE = "aws:ec2/instance:Instance"


def delete_args(outputs: dict[str, Any] | None) -> pulumi.ResourceHookArgs:
    """What the engine hands a before_delete hook: the old outputs only (``ResourceHookArgs``, SDK 3.272)."""
    return pulumi.ResourceHookArgs(urn="urn:pulumi:test::gpulease::aws:ec2/instance:Instance::exp1-instance",
                                   id="i-0123456789abcdef0", name="exp1-instance", type=INSTANCE,
                                   old_inputs={}, old_outputs=outputs)


def persistent_request(ec2: Any) -> str:
    return ec2.request_spot_instances(
        Type="persistent", InstanceInterruptionBehavior="stop", InstanceCount=1,
        LaunchSpecification={"ImageId": IMAGE, "InstanceType": "g5.xlarge"},
    )["SpotInstanceRequests"][0]["SpotInstanceRequestId"]


def live(ec2: Any) -> list[tuple[str, str]]:
    """The requests moto still lists, with their states (moto drops a cancelled one from its listing)."""
    return [(r["SpotInstanceRequestId"], r["State"]) for r in ec2.describe_spot_instance_requests()["SpotInstanceRequests"]
            if r["State"] in ("open", "active", "disabled")]


@pytest.fixture
def hook() -> pulumi.ResourceHook:
    """The hook as the program makes it, its registration resolved without an engine."""
    from gpulease.review.mock_hooks import HookRecorder, recording_hooks

    recorder = HookRecorder()

    async def make() -> pulumi.ResourceHook:
        with recording_hooks(recorder):
            return spot_hook.cancel_before_delete("exp1", REGION)

    import asyncio
    made = asyncio.new_event_loop().run_until_complete(make())
    assert recorder.hooks == {"exp1-cancel-spot-request": made}
    return made


def test_every_spot_instance_carries_the_named_hook_and_registers_it() -> None:
    r = render_experiment(experiment())
    assert r.error is None, r.error
    assert r.one(INSTANCE).hooks == {"before_delete": ["exp1-cancel-spot-request"]}
    assert "exp1-cancel-spot-request" in r.hooks


def test_a_one_time_spot_instance_carries_it_too_and_on_demand_none() -> None:
    one_time = render_experiment(experiment(spot={"recover": False}))
    assert one_time.error is None, one_time.error
    assert one_time.one(INSTANCE).hooks == {"before_delete": ["exp1-cancel-spot-request"]}
    on_demand = render_experiment(experiment(market="on-demand", onDemandReason="interactive debugging - no interruptions"))
    assert on_demand.error is None, on_demand.error
    assert on_demand.one(INSTANCE).hooks == {} and on_demand.hooks == []


def test_a_parked_experiment_still_registers_the_hook_by_name() -> None:
    """The engine runs the delete hook of an instance that left the program by its name: parking keeps it."""
    r = render_experiment(experiment(phase="parked"))
    assert r.error is None, r.error
    assert r.of_type(INSTANCE) == [] and r.hooks == ["exp1-cancel-spot-request"]


def test_the_hook_cancels_the_instances_request(hook: pulumi.ResourceHook, aws: MotoAws,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    ec2 = aws.client("ec2")
    rid, other = persistent_request(ec2), persistent_request(ec2)
    assert {r for r, _ in live(ec2)} == {rid, other}
    monkeypatch.setattr(spot_hook, "CLIENT", lambda region: aws.client("ec2", region))
    hook(delete_args({"spotInstanceRequestId": rid, "instanceLifecycle": "spot"}))
    assert [r for r, _ in live(ec2)] == [other]  # that one request, no other


@pytest.mark.parametrize("ended", ["cancelled", "closed", "completed"])
def test_a_request_ended_already_lets_the_delete_go_on(hook: pulumi.ResourceHook, monkeypatch: pytest.MonkeyPatch,
                                                       ended: str) -> None:
    # moto answers a second cancel with a 500; EC2's answer for an ended request is its state (not verified here).
    answer = {"CancelledSpotInstanceRequests": [{"SpotInstanceRequestId": "sir-abc", "State": ended}]}
    monkeypatch.setattr(spot_hook, "CLIENT", lambda region: stubbed(None, answer))
    hook(delete_args({"spotInstanceRequestId": "sir-abc"}))


def test_no_request_id_calls_nothing(hook: pulumi.ResourceHook, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spot_hook, "CLIENT", lambda region: pytest.fail("no request: no call"))
    for outputs in (None, {}, {"spotInstanceRequestId": ""}, {"spotInstanceRequestId": None}):
        hook(delete_args(outputs))


def stubbed(error_code: str | None, answer: dict | None = None) -> Any:
    import boto3

    ec2 = boto3.client("ec2", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(ec2)
    if error_code is not None:
        stub.add_client_error("cancel_spot_instance_requests", service_error_code=error_code,
                              service_message="refused", expected_params={"SpotInstanceRequestIds": ["sir-abc"]})
    else:
        stub.add_response("cancel_spot_instance_requests", answer or {},
                          expected_params={"SpotInstanceRequestIds": ["sir-abc"]})
    stub.activate()
    return ec2


def test_a_request_ec2_no_longer_knows_passes(hook: pulumi.ResourceHook, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spot_hook, "CLIENT", lambda region: stubbed("InvalidSpotInstanceRequestID.NotFound"))
    hook(delete_args({"spotInstanceRequestId": "sir-abc"}))


def test_a_failing_cancel_raises_and_so_refuses_the_delete(hook: pulumi.ResourceHook,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    regions: list[str] = []

    def client(region: str) -> Any:
        regions.append(region)
        return stubbed("UnauthorizedOperation")

    monkeypatch.setattr(spot_hook, "CLIENT", client)
    with pytest.raises(spot_hook.SpotCancelRefusedError) as err:
        hook(delete_args({"spotInstanceRequestId": "sir-abc"}))
    assert regions == [REGION]
    assert str(err.value).startswith("exp1: cancelling spot request sir-abc failed (UnauthorizedOperation: ")
    assert str(err.value).endswith("the instance is not deleted, so the request cannot re-open and launch another. "
                                   "Fix the cause and run the operation again")


def test_an_answer_that_is_not_an_end_raises(hook: pulumi.ResourceHook, monkeypatch: pytest.MonkeyPatch) -> None:
    answer = {"CancelledSpotInstanceRequests": [{"SpotInstanceRequestId": "sir-abc", "State": "open"}]}
    monkeypatch.setattr(spot_hook, "CLIENT", lambda region: stubbed(None, answer))
    with pytest.raises(spot_hook.SpotCancelRefusedError, match=r"^exp1: EC2 answered the cancel of spot request sir-abc "
                       r"with state open \(accepted: cancelled, closed, completed\); the instance is not deleted"):
        hook(delete_args({"spotInstanceRequestId": "sir-abc"}))
    monkeypatch.setattr(spot_hook, "CLIENT", lambda region: stubbed(None, {}))
    with pytest.raises(spot_hook.SpotCancelRefusedError, match="with state none"):
        hook(delete_args({"spotInstanceRequestId": "sir-abc"}))


def test_the_client_is_bounded() -> None:
    config = spot_hook.ec2_client(REGION).meta.config
    assert (config.connect_timeout, config.read_timeout) == (5, 20)
    assert config.retries["mode"] == "standard" and config.retries["total_max_attempts"] == 5 + 1


def test_a_client_error_without_a_code_is_a_failure() -> None:
    class Broken:
        def cancel_spot_instance_requests(self, **kw: Any) -> dict:
            raise ClientError({"Error": {}}, "CancelSpotInstanceRequests")

    with pytest.raises(spot_hook.SpotCancelRefusedError, match=r"failed \(no error code: "):
        spot_hook.cancel_request(Broken(), "sir-abc", "exp1")
