"""The spot instances' before_delete hook: one stable name every program registers (any cloud, any market), bound to
each spot instance, its cancel run from the instance's old outputs alone (request id, region and account from its
ARN) on moto's EC2 (127.0.0.1): the request cancelled in the instance's region, a request EC2 no longer knows let
through only in the instance's own account, any other failure refusing the delete."""

from __future__ import annotations

from typing import Any

import boto3
import pulumi
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from components.aws import spot_hook
from tests.support.alicloud import ali_experiment, render_ali
from tests.support.inventory import IMAGE, REGION, MotoAws
from tests.support.specs import experiment, render_experiment

INSTANCE = "aws:ec2/instance:Instance"
HOOK = "gpulease-cancel-spot-request"
MOTO_ACCOUNT = "123456789012"
ARN = f"arn:aws:ec2:{REGION}:{MOTO_ACCOUNT}:instance/i-0123456789abcdef0"


def delete_args(outputs: dict[str, Any] | None, name: str = "exp1-instance") -> pulumi.ResourceHookArgs:
    """What the engine hands a before_delete hook: the old outputs only (``ResourceHookArgs``, SDK 3.272)."""
    return pulumi.ResourceHookArgs(urn=f"urn:pulumi:test::gpulease::aws:ec2/instance:Instance::{name}",
                                   id="i-0123456789abcdef0", name=name, type=INSTANCE,
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


class FakeSession:
    """A session whose EC2 is ``ec2`` and whose STS says ``account``."""

    def __init__(self, ec2: Any, account: str = MOTO_ACCOUNT) -> None:
        self.ec2, self.account = ec2, account

    def client(self, service: str, **kw: Any) -> Any:
        if service == "ec2":
            return self.ec2
        account = self.account

        class Sts:
            def get_caller_identity(self) -> dict:
                return {"Account": account}

        return Sts()


def use(monkeypatch: pytest.MonkeyPatch, ec2: Any, account: str = MOTO_ACCOUNT) -> list[str]:
    regions: list[str] = []

    def session(region: str) -> FakeSession:
        regions.append(region)
        return FakeSession(ec2, account)

    monkeypatch.setattr(spot_hook, "SESSION", session)
    return regions


def test_every_spot_instance_carries_the_stable_hook_and_the_program_registers_it() -> None:
    r = render_experiment(experiment())
    assert r.error is None, r.error
    assert r.one(INSTANCE).hooks == {"before_delete": [HOOK]}
    assert r.hooks == [HOOK]


def test_a_one_time_spot_instance_carries_it_too() -> None:
    one_time = render_experiment(experiment(spot={"recover": False}))
    assert one_time.error is None, one_time.error
    assert one_time.one(INSTANCE).hooks == {"before_delete": [HOOK]}


def test_an_on_demand_program_still_registers_it_for_the_spot_instance_it_replaces() -> None:
    """Spot to on-demand replaces the instance: the old one's state names the hook, the engine finds it by name in
    the program running now, or fails the delete ("hook %q was not registered", pulumi/pulumi deployment.go)."""
    on_demand = render_experiment(experiment(market="on-demand", onDemandReason="interactive debugging - no interruptions"))
    assert on_demand.error is None, on_demand.error
    assert on_demand.one(INSTANCE).hooks == {} and on_demand.hooks == [HOOK]


def test_a_renamed_or_parked_experiment_keeps_the_same_hook_name() -> None:
    renamed = render_experiment(experiment(name="exp2"))
    parked = render_experiment(experiment(phase="parked"))
    assert renamed.error is None and parked.error is None
    assert renamed.one(INSTANCE).hooks == {"before_delete": [HOOK]} and renamed.hooks == [HOOK]
    assert parked.of_type(INSTANCE) == [] and parked.hooks == [HOOK]


def test_an_alibaba_program_registers_it_too() -> None:
    r = render_ali(ali_experiment())
    assert r.error is None, r.error
    assert r.hooks == [HOOK]


def test_the_hook_cancels_the_instances_request_from_its_outputs(aws: MotoAws, monkeypatch: pytest.MonkeyPatch) -> None:
    ec2 = aws.client("ec2")
    rid, other = persistent_request(ec2), persistent_request(ec2)
    regions = use(monkeypatch, ec2)
    spot_hook.cancel_before_delete(delete_args({"spotInstanceRequestId": rid, "arn": ARN}))
    assert [r for r, _ in live(ec2)] == [other] and regions == [REGION]  # that one request, no other


def test_the_hook_cancels_in_the_region_of_a_rendered_eu_west_1_instance(aws: MotoAws,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The region comes from the instance's own outputs (its ARN), not from the program: an instance in eu-west-1
    has its request cancelled there."""
    r = render_experiment(experiment(), region="eu-west-1")
    assert r.error is None, r.error
    outputs = dict(r.one(INSTANCE).outputs)
    assert outputs["arn"].startswith("arn:aws:ec2:eu-west-1:")
    ec2 = aws.client("ec2", "eu-west-1")
    rid = persistent_request(ec2)
    regions = use(monkeypatch, ec2, account=outputs["arn"].split(":")[4])
    spot_hook.cancel_before_delete(delete_args({**outputs, "spotInstanceRequestId": rid}))
    assert regions == ["eu-west-1"] and live(ec2) == []


def test_without_an_arn_the_zone_gives_the_region() -> None:
    assert spot_hook.where({"availabilityZone": "eu-west-1b"}) == ("eu-west-1", None)
    assert spot_hook.where({"availabilityZone": "us-east-1-bos-1a"}) == ("us-east-1", None)
    assert spot_hook.where({"arn": "arn:aws:ec2:ap-south-1:210987654321:instance/i-1", "availabilityZone": "x"}) == (
        "ap-south-1", "210987654321")
    assert spot_hook.where({}) == (None, None)


def test_outputs_naming_no_region_refuse_the_delete(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spot_hook, "SESSION", lambda region: pytest.fail("no region: no call"))
    with pytest.raises(spot_hook.SpotCancelRefusedError) as err:
        spot_hook.cancel_before_delete(delete_args({"spotInstanceRequestId": "sir-abc"}))
    assert str(err.value) == ("exp1-instance: cancelling spot request sir-abc failed (its outputs name no region (arn, "
                              "availabilityZone)); the instance is not deleted, so the request cannot re-open and "
                              "launch another. Fix the cause and run the operation again")


@pytest.mark.parametrize("ended", ["cancelled", "closed", "completed"])
def test_a_request_ended_already_lets_the_delete_go_on(monkeypatch: pytest.MonkeyPatch, ended: str) -> None:
    # moto answers a second cancel with a 500; EC2's answer for an ended request is its state (not verified here).
    answer = {"CancelledSpotInstanceRequests": [{"SpotInstanceRequestId": "sir-abc", "State": ended}]}
    use(monkeypatch, stubbed(None, answer))
    spot_hook.cancel_before_delete(delete_args({"spotInstanceRequestId": "sir-abc", "arn": ARN}))


def test_no_request_id_calls_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spot_hook, "SESSION", lambda region: pytest.fail("no request: no call"))
    for outputs in (None, {}, {"spotInstanceRequestId": ""}, {"spotInstanceRequestId": None}):
        spot_hook.cancel_before_delete(delete_args(outputs))


def stubbed(error_code: str | None, answer: dict | None = None) -> Any:
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


def test_a_request_ec2_no_longer_knows_in_the_instances_account_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    use(monkeypatch, stubbed("InvalidSpotInstanceRequestID.NotFound"))
    spot_hook.cancel_before_delete(delete_args({"spotInstanceRequestId": "sir-abc", "arn": ARN}))


def test_not_found_in_another_account_refuses_the_delete(monkeypatch: pytest.MonkeyPatch) -> None:
    """Credentials of another account get NotFound for the instance's request: that is not "gone"."""
    use(monkeypatch, stubbed("InvalidSpotInstanceRequestID.NotFound"), account="222222222222")
    with pytest.raises(spot_hook.SpotCancelRefusedError) as err:
        spot_hook.cancel_before_delete(delete_args({"spotInstanceRequestId": "sir-abc", "arn": ARN}))
    assert str(err.value) == (
        "exp1-instance: cancelling spot request sir-abc failed (InvalidSpotInstanceRequestID.NotFound in account "
        f"222222222222, but the instance is in account {MOTO_ACCOUNT}: the credentials reach another account); the "
        "instance is not deleted, so the request cannot re-open and launch another. Set the stack's aws:profile, keys "
        "or aws:assumeRole to the instance's account and run the operation again")


def test_not_found_without_the_instances_account_refuses_the_delete(monkeypatch: pytest.MonkeyPatch) -> None:
    use(monkeypatch, stubbed("InvalidSpotInstanceRequestID.NotFound"))
    with pytest.raises(spot_hook.SpotCancelRefusedError, match=r"NotFound, and the instance's account is not known"):
        spot_hook.cancel_before_delete(delete_args({"spotInstanceRequestId": "sir-abc", "availabilityZone": "us-east-1a"}))


def test_a_failing_cancel_raises_and_so_refuses_the_delete(monkeypatch: pytest.MonkeyPatch) -> None:
    regions = use(monkeypatch, stubbed("UnauthorizedOperation"))
    with pytest.raises(spot_hook.SpotCancelRefusedError) as err:
        spot_hook.cancel_before_delete(delete_args({"spotInstanceRequestId": "sir-abc", "arn": ARN}))
    assert regions == [REGION]
    assert str(err.value).startswith("exp1-instance: cancelling spot request sir-abc failed (UnauthorizedOperation: ")
    assert str(err.value).endswith("the instance is not deleted, so the request cannot re-open and launch another. "
                                   "Fix the cause and run the operation again")


def test_credentials_that_cannot_be_made_refuse_the_delete(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(region: str) -> Any:
        raise RuntimeError("profile research-account not found")

    monkeypatch.setattr(spot_hook, "SESSION", broken)
    with pytest.raises(spot_hook.SpotCancelRefusedError, match=r"failed \(the stack's AWS credentials: RuntimeError: "
                       r"profile research-account not found\); the instance is not deleted"):
        spot_hook.cancel_before_delete(delete_args({"spotInstanceRequestId": "sir-abc", "arn": ARN}))


def test_an_answer_that_is_not_an_end_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    answer = {"CancelledSpotInstanceRequests": [{"SpotInstanceRequestId": "sir-abc", "State": "open"}]}
    use(monkeypatch, stubbed(None, answer))
    with pytest.raises(spot_hook.SpotCancelRefusedError, match=r"^exp1-instance: EC2 answered the cancel of spot "
                       r"request sir-abc with state open \(accepted: cancelled, closed, completed\); the instance is "
                       r"not deleted"):
        spot_hook.cancel_before_delete(delete_args({"spotInstanceRequestId": "sir-abc", "arn": ARN}))
    use(monkeypatch, stubbed(None, {}))
    with pytest.raises(spot_hook.SpotCancelRefusedError, match="with state none"):
        spot_hook.cancel_before_delete(delete_args({"spotInstanceRequestId": "sir-abc", "arn": ARN}))


def test_the_client_is_bounded() -> None:
    config = spot_hook.ec2_client(boto3.Session(), REGION).meta.config
    assert (config.connect_timeout, config.read_timeout) == (5, 20)
    assert config.retries["mode"] == "standard" and config.retries["total_max_attempts"] == 5 + 1


def test_a_client_error_without_a_code_is_a_failure() -> None:
    class Broken:
        def cancel_spot_instance_requests(self, **kw: Any) -> dict:
            raise ClientError({"Error": {}}, "CancelSpotInstanceRequests")

    with pytest.raises(spot_hook.SpotCancelRefusedError, match=r"failed \(no error code: "):
        spot_hook.cancel_request(Broken(), "sir-abc", "exp1")
