"""cloud_access in-process against the hardened loopback metadata service: the token rules, the total deadline,
the role's credentials and their refresh before expiry, and the storage command's credential source."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from components.userdata import SYNC_COMMANDS
from instance import cloud_access
from tests.support.instance import ALI_CREDENTIALS, TOKEN, MetadataServer, MetadataState


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_a_tokenless_read_is_refused_and_the_client_never_makes_one(cloud: str) -> None:
    state = MetadataState(cloud=cloud)
    with MetadataServer(state) as server:
        raw, _ = cloud_access.http_request("GET", server.url + "/latest/meta-data/instance-id", {}, 2)
        no_ttl, _ = cloud_access.http_request("PUT", server.url + "/latest/api/token", {}, 2)
        md = cloud_access.Metadata(cloud, server.url, 2)
        assert md.value("/latest/meta-data/instance-id") == state.instance_id
    assert raw == (401 if cloud == "aws" else 403) and no_ttl == 400  # what the real services answer
    put, get = state.requests[-2:]
    ttl = "x-aws-ec2-metadata-token-ttl-seconds" if cloud == "aws" else "x-aliyun-ecs-metadata-token-ttl-seconds"
    header = "x-aws-ec2-metadata-token" if cloud == "aws" else "x-aliyun-ecs-metadata-token"
    assert put[:2] == ("PUT", "/latest/api/token") and put[2][ttl] == "21600"
    assert get[2][header] == TOKEN
    assert len(state.refused) == 1  # only the test's own bare GET


def test_a_trickled_answer_is_cut_at_the_total_deadline_even_in_its_headers() -> None:
    state = MetadataState(cloud="aws", trickle=0.05)
    with MetadataServer(state) as server:
        started = time.monotonic()
        with pytest.raises(cloud_access.HttpError, match=r"timed out after 0\.50 s"):
            cloud_access.http_request("PUT", server.url + "/latest/api/token",
                                      {"X-aws-ec2-metadata-token-ttl-seconds": "60"}, 0.5)
        assert time.monotonic() - started < 1.5


def test_a_rejected_token_is_replaced_once() -> None:
    state = MetadataState(cloud="alicloud")
    with MetadataServer(state) as server:
        md = cloud_access.Metadata("alicloud", server.url, 2)
        md.token()
        md._token = "revoked"
        assert md.value("/latest/meta-data/instance-id") == state.instance_id
    assert state.issued == 2


@pytest.mark.parametrize(("expires_in", "reads"), [(3600, 1), (200, 3)])
def test_role_credentials_are_cached_until_five_minutes_before_they_expire(expires_in: float, reads: int) -> None:
    state = MetadataState(cloud="alicloud", credentials_expire_in=expires_in)
    with MetadataServer(state) as server:
        creds = cloud_access.RoleCredentials(cloud_access.Metadata("alicloud", server.url, 2))
        for _ in range(3):
            got = creds.get()
    assert got == {"id": ALI_CREDENTIALS["AccessKeyId"], "secret": ALI_CREDENTIALS["AccessKeySecret"],
                   "token": ALI_CREDENTIALS["SecurityToken"], "expiration": got["expiration"]}
    role_reads = [p for m, p, _ in state.requests if p.endswith("/security-credentials/gpulease-exp1-role")]
    assert len(role_reads) == reads
    assert state.refused == []


def test_an_instance_without_a_role_gets_a_clear_error() -> None:
    with MetadataServer(MetadataState(cloud="alicloud", role="")) as server, pytest.raises(
        cloud_access.CredentialsError, match="the instance has no role attached"
    ):
        cloud_access.RoleCredentials(cloud_access.Metadata("alicloud", server.url, 2)).get()


def test_the_ossutil_config_is_private_and_removed_after_the_call(tmp_path: Path) -> None:
    with MetadataServer(MetadataState(cloud="alicloud")) as server:
        md = cloud_access.Metadata("alicloud", server.url, 2)
        call = cloud_access.storage_command(
            SYNC_COMMANDS["alicloud"], {"src": "/data/checkpoints", "dst": "oss://b/p/"}, cloud="alicloud",
            region="cn-hangzhou", metadata=md, credentials=cloud_access.RoleCredentials(md), private_dir=str(tmp_path),
        )
    config = call.argv[call.argv.index("-c") + 1]
    assert oct(os.stat(config).st_mode & 0o777) == "0o600" and oct(os.stat(os.path.dirname(config)).st_mode & 0o777) == "0o700"
    assert call.argv[call.argv.index("-e") + 1] == "https://oss-cn-hangzhou-internal.aliyuncs.com"
    assert ALI_CREDENTIALS["AccessKeySecret"] not in " ".join(call.argv)
    assert not any(ALI_CREDENTIALS["AccessKeySecret"] in value for value in call.env.values())
    call.close()
    assert os.listdir(tmp_path) == []
