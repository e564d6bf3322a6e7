"""Alibaba Cloud: after the final sync the watchdog releases its own instance through the ECS API, signed with the
role's STS credentials read through the metadata token; it falls back to a stop in no-charge mode, then to a
shutdown, and says which happened. The request signature is checked with Alibaba Cloud's own Python SDK signer;
the RAM policy that allows it names that one instance."""

from __future__ import annotations

import json
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from aliyunsdkcore.auth.algorithm import sha_hmac1
from aliyunsdkcore.auth.composer import rpc_signature_composer

from components.alicloud.identity import self_release_policy
from instance import cloud_access
from tests.support.alicloud import INSTANCE, RAM_POLICY, RAM_POLICY_ATTACHMENT, RAM_ROLE, ali_experiment, render_ali
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
_compose = getattr(rpc_signature_composer, "__compose_string_to_sign")  # the SDK's own canonical string


def sdk_signature(params: dict[str, str], secret: str) -> str:
    """What aliyun-python-sdk-core computes for the same query (HMAC-SHA1, key = secret + "&")."""
    return sha_hmac1.get_sign_string(_compose("GET", params), secret + "&")


@dataclass
class EcsApi:
    """A stand-in for the ECS endpoint: verifies every request's signature, answers per action."""

    answers: dict[str, int] = field(default_factory=lambda: {"DeleteInstance": 200, "StopInstance": 200})
    calls: list[dict[str, str]] = field(default_factory=list)
    bad_signatures: int = 0

    def __post_init__(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query, keep_blank_values=True))
                signature = query.pop("Signature", "")
                if signature != sdk_signature(query, ALI_CREDENTIALS["AccessKeySecret"]):
                    outer.bad_signatures += 1
                    return self._answer(400, {"Code": "SignatureDoesNotMatch"})
                outer.calls.append(query)
                status = outer.answers.get(query.get("Action", ""), 400)
                body = {"RequestId": "R-1"} if status == 200 else {"Code": "Forbidden.RAM", "Message": "not allowed"}
                return self._answer(status, body)

            def _answer(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


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
    (statement,) = policy["Statement"]
    assert statement["Action"] == ["ecs:DeleteInstance", "ecs:StopInstance"]
    assert statement["Resource"] == [f"acs:ecs:cn-hangzhou:1234567890123456:instance/{instance.id}"]
    attachment = r.by_name("exp1-self-release-attachment").inputs
    assert attachment["roleName"] == r.one(RAM_ROLE).outputs["roleName"]
    assert attachment["policyName"] == r.by_name("exp1-self-release").outputs["policyName"]
    assert len(r.of_type(RAM_POLICY)) == len(r.of_type(RAM_POLICY_ATTACHMENT)) == 2
    assert json.loads(r.by_name("exp1-checkpoint-access").inputs["policyDocument"])  # the storage grant is apart
