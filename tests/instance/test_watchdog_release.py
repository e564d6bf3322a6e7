"""Alibaba Cloud: after the final sync the watchdog releases its own instance through the ECS API, signed with the
role's STS credentials read through the metadata token; it falls back to a stop in no-charge mode, then to a
shutdown, and says which happened. The request signature is checked with Alibaba Cloud's own Python SDK signer;
the RAM policy that allows it names that one instance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.alicloud.identity import self_release_policy
from instance import cloud_access
from tests.support.alicloud import INSTANCE, RAM_POLICY, RAM_POLICY_ATTACHMENT, RAM_ROLE, ali_experiment, render_ali
from tests.support.ecs_api import EcsApi, sdk_signature
from tests.support.instance import (
    ALI_CREDENTIALS,
    DEADLINE_EPOCH,
    MetadataServer,
    MetadataState,
    iso,
    make_rig,
    run_in_process,
)

START = DEADLINE_EPOCH - 6 * 3600


@pytest.fixture
def ecs() -> EcsApi:
    api = EcsApi()
    yield api
    api.close()


def _run(tmp_path: Path, ecs: EcsApi) -> tuple[Any, MetadataState]:
    state = MetadataState(cloud="alicloud", termination_time=iso(START + 300), instance_id="i-bp1selfrelease")
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, cloud="alicloud", region="cn-hangzhou",
                       checkpoint_uri="oss://bucket/ckpt/", self_release=True, ecs_endpoint=ecs.url)
        run_in_process(rig, start=START, max_ticks=5)
    return rig, state


def test_the_instance_releases_itself_after_the_final_sync(tmp_path: Path, ecs: EcsApi) -> None:
    rig, state = _run(tmp_path, ecs)
    assert ecs.bad_signatures == 0
    (call,) = ecs.calls
    assert call["Action"] == "DeleteInstance" and call["InstanceId"] == "i-bp1selfrelease" and call["Force"] == "true"
    assert call["RegionId"] == "cn-hangzhou" and call["Version"] == "2014-05-26"
    assert call["AccessKeyId"] == ALI_CREDENTIALS["AccessKeyId"] and call["SecurityToken"] == ALI_CREDENTIALS["SecurityToken"]
    assert (call["SignatureMethod"], call["SignatureVersion"]) == ("HMAC-SHA1", "1.0")
    assert rig.names() == ["checkpoint-hook", "sync"]  # released: no shutdown needed
    assert "release: spot instance to be released at" in rig.log_text()
    assert "instance i-bp1selfrelease released through DeleteInstance (Force)" in rig.log_text()
    assert state.refused == []  # credentials and instance id read through the token
    assert ALI_CREDENTIALS["AccessKeySecret"] not in rig.log_text()


def test_a_refused_release_falls_back_to_a_stop_in_no_charge_mode_then_a_shutdown(tmp_path: Path, ecs: EcsApi) -> None:
    ecs.answers["DeleteInstance"] = 403
    rig, _ = _run(tmp_path, ecs)
    assert [c["Action"] for c in ecs.calls] == ["DeleteInstance", "StopInstance"]
    stop = ecs.calls[1]
    assert (stop["StoppedMode"], stop["ForceStop"], stop["InstanceId"]) == ("StopCharging", "true", "i-bp1selfrelease")
    log = rig.log_text()
    assert "release: DeleteInstance answered 403: Forbidden.RAM not allowed" in log
    assert "stopped in no-charge mode (StopInstance, StopCharging); the release time ends it" in log
    assert rig.names() == ["checkpoint-hook", "sync", "shutdown"]  # the stop from inside goes on regardless


def test_with_no_api_at_all_it_shuts_down_and_says_the_release_time_is_the_backstop(tmp_path: Path, ecs: EcsApi) -> None:
    ecs.answers = {}
    rig, _ = _run(tmp_path, ecs)
    log = rig.log_text()
    assert "falling back to a shutdown; the instance's release time is the backstop" in log
    assert rig.names()[-1] == "shutdown"


def test_the_signature_matches_the_sdk_for_awkward_values() -> None:
    params = {"Action": "DeleteInstance", "InstanceId": "i-a b+c*~/é", "Timestamp": "2026-12-01T08:00:00Z"}
    assert cloud_access.rpc_signature("GET", params, "s3cr3t/+=") == sdk_signature(params, "s3cr3t/+=")


def test_the_role_may_release_its_own_instance_and_nothing_else() -> None:
    r = render_ali(ali_experiment())
    assert r.error is None, r.error
    instance = r.one(INSTANCE)
    policy = json.loads(r.by_name("exp1-self-release").inputs["policyDocument"])
    assert policy == json.loads(self_release_policy("cn-hangzhou", "1234567890123456", instance.id))
    arn = f"acs:ecs:cn-hangzhou:1234567890123456:instance/{instance.id}"
    # Release or stop it, and read its own description (the deadline tag): that one instance, nothing else.
    assert policy["Statement"] == [
        {"Action": ["ecs:DeleteInstance", "ecs:StopInstance"], "Effect": "Allow", "Resource": [arn]},
        {"Action": ["ecs:DescribeInstances"], "Effect": "Allow", "Resource": [arn]},
    ]
    assert policy["Version"] == "1" and set(policy) == {"Version", "Statement"}
    attachment = r.by_name("exp1-self-release-attachment").inputs
    assert attachment["roleName"] == r.one(RAM_ROLE).outputs["roleName"]
    assert attachment["policyName"] == r.by_name("exp1-self-release").outputs["policyName"]
    # The self-release, the storage grant and the read of its one tools bundle (outside the checkpoint prefix).
    assert len(r.of_type(RAM_POLICY)) == len(r.of_type(RAM_POLICY_ATTACHMENT)) == 3
    assert {p.name for p in r.of_type(RAM_POLICY)} == {"exp1-self-release", "exp1-checkpoint-access", "exp1-tools-read"}
    assert json.loads(r.by_name("exp1-checkpoint-access").inputs["policyDocument"])  # the storage grant is apart
