"""The kit's own AWS calls (the spot hook, down's cancel and check, up's parking cancel) use the stack's provider
credentials: its profile, static keys, or roles assumed through STS (moto's, 127.0.0.1), and refuse what they cannot
follow with one line naming the key."""

from __future__ import annotations

from typing import Any

import pytest

from components import aws_credentials as creds_mod
from components.aws import spot_hook
from components.aws_credentials import ProviderCredentials, provider_credentials
from gpulease.core.errors import UserError
from tests.support.inventory import IMAGE, REGION, MotoAws
from tests.support.specs import experiment

OTHER = "111111111111"
ROLE = f"arn:aws:iam::{OTHER}:role/deployer"
SOURCE = "stacks/Pulumi.prof.yaml"


def test_the_provider_keys_are_read_as_the_engine_or_the_stack_file_gives_them() -> None:
    assert provider_credentials({"aws:region": "us-east-1"}, SOURCE) == ProviderCredentials()
    assert provider_credentials({"aws:profile": "research-account"}, SOURCE).profile == "research-account"
    keys = provider_credentials({"aws:accessKey": "AKIA1", "aws:secretKey": "s", "aws:token": "t"}, SOURCE)
    assert (keys.access_key, keys.secret_key, keys.token) == ("AKIA1", "s", "t")
    one = provider_credentials({"aws:assumeRole": f'{{"roleArn": "{ROLE}", "externalId": "x"}}'}, SOURCE)
    chain = provider_credentials({"aws:assumeRoles": [{"roleArn": ROLE}, {"roleArn": ROLE, "sessionName": "s"}]}, SOURCE)
    assert one.roles == ({"roleArn": ROLE, "externalId": "x"},) and len(chain.roles) == 2


@pytest.mark.parametrize(("config", "message"), [
    ({"aws:sharedCredentialsFiles": ["/x"]},
     f"{SOURCE}: aws:sharedCredentialsFiles is set, but the kit's own AWS calls (the spot request cancels) cannot "
     "follow it and could reach another account; accepted: aws:profile, aws:accessKey/aws:secretKey/aws:token, "
     "aws:assumeRole or aws:assumeRoles"),
    ({"aws:assumeRoleWithWebIdentity": {"roleArn": ROLE}},
     f"{SOURCE}: aws:assumeRoleWithWebIdentity is set, but the kit's own AWS calls (the spot request cancels) cannot "
     "follow it and could reach another account; accepted: aws:profile, aws:accessKey/aws:secretKey/aws:token, "
     "aws:assumeRole or aws:assumeRoles"),
    ({"aws:accessKey": "AKIA1"}, f"{SOURCE}: aws:secretKey is missing; accepted: aws:accessKey and aws:secretKey "
     "together, or neither"),
    ({"aws:assumeRole": {"roleArn": ROLE, "sessionTags": {}}}, f"{SOURCE}: aws:assumeRole.sessionTags is not a role "
     "field the kit's own AWS calls can honour; accepted: roleArn, sessionName, externalId, policy, policyArns, "
     "sourceIdentity, tags, transitiveTagKeys, duration"),
    ({"aws:assumeRole": {"roleArn": "deployer"}}, f"{SOURCE}: aws:assumeRole.roleArn must be a role ARN "
     "(arn:aws:iam::ACCOUNT:role/NAME), got 'deployer'"),
    ({"aws:profile": ""}, f"{SOURCE}: aws:profile must be non-empty text (got str); accepted: the value the AWS "
     "provider reads"),
])
def test_what_cannot_be_honoured_is_one_line_naming_the_key(config: dict, message: str) -> None:
    with pytest.raises(UserError) as err:
        provider_credentials(config, SOURCE)
    assert str(err.value) == message


def test_the_plan_refuses_a_key_it_cannot_follow() -> None:
    from gpulease.review.render import render
    r = render({"aws:region": "us-east-1", "aws:sharedConfigFiles": ["/x"], "gpulease:experiment": experiment()},
               stack="test")
    assert r.error is not None and "aws:sharedConfigFiles is set, but the kit's own AWS calls" in r.error
    assert "Traceback" not in r.error


def _request(ec2: Any) -> str:
    return ec2.request_spot_instances(Type="persistent", InstanceInterruptionBehavior="stop", InstanceCount=1,
                                      LaunchSpecification={"ImageId": IMAGE, "InstanceType": "g5.xlarge"},
                                      )["SpotInstanceRequests"][0]["SpotInstanceRequestId"]


def _live(ec2: Any) -> list[str]:
    return [r["SpotInstanceRequestId"] for r in ec2.describe_spot_instance_requests()["SpotInstanceRequests"]
            if r["State"] in ("open", "active", "disabled")]


def test_an_assumed_role_reaches_its_account(aws: MotoAws) -> None:
    session = creds_mod.session(ProviderCredentials(roles=({"roleArn": ROLE},)), REGION)
    assert session.client("sts").get_caller_identity()["Account"] == OTHER


def test_the_hook_cancels_in_the_account_of_the_stack_s_role(aws: MotoAws, monkeypatch: pytest.MonkeyPatch) -> None:
    """The request lives in the role's account; the hook, with the stack's aws:assumeRole, cancels it there."""
    role = ProviderCredentials(roles=({"roleArn": ROLE},))
    ec2 = creds_mod.session(role, REGION).client("ec2")
    rid = _request(ec2)
    monkeypatch.setattr(spot_hook, "program_credentials", lambda: role)
    outputs = {"spotInstanceRequestId": rid, "arn": f"arn:aws:ec2:{REGION}:{OTHER}:instance/i-0abc"}
    spot_hook.cancel_before_delete(_args(outputs))
    assert _live(ec2) == []


def test_the_default_chain_in_another_account_refuses_the_delete(aws: MotoAws, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the stack's role the cancel reaches moto's default account, which does not know the request (moto
    answers a 500 there, EC2 NotFound: that case is ``test_spot_hook``'s): the delete is refused either way."""
    role = ProviderCredentials(roles=({"roleArn": ROLE},))
    ec2 = creds_mod.session(role, REGION).client("ec2")
    rid = _request(ec2)
    monkeypatch.setattr(spot_hook, "program_credentials", lambda: ProviderCredentials())
    outputs = {"spotInstanceRequestId": rid, "arn": f"arn:aws:ec2:{REGION}:{OTHER}:instance/i-0abc"}
    with pytest.raises(spot_hook.SpotCancelRefusedError, match=rf"^exp1-instance: cancelling spot request {rid} "
                       r"failed \(ResponseParserError: "):
        spot_hook.cancel_before_delete(_args(outputs))
    assert _live(ec2) == [rid]


def _args(outputs: dict) -> Any:
    import pulumi

    return pulumi.ResourceHookArgs(urn="urn:pulumi:t::gpulease::aws:ec2/instance:Instance::exp1-instance",
                                   id="i-0abc", name="exp1-instance", type="aws:ec2/instance:Instance",
                                   old_inputs={}, old_outputs=outputs)


def test_the_role_is_assumed_with_bounded_retries() -> None:
    config = creds_mod.bounded_config()
    assert (config.connect_timeout, config.read_timeout) == (5, 20)
    assert config.retries == {"mode": "standard", "max_attempts": 5}
