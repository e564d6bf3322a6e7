"""The Alibaba Cloud stub for the inventory and reaper tests: one server per test session, an empty account per
test, the real SDKs pointed at it through ``GPULEASE_ALICLOUD_ENDPOINT``, and credentials that exist only here.

The credential chain's metadata-service step is switched off (it would reach for 100.100.100.200), and no CLI
profile file is read, so nothing here can leave the machine.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from alibabacloud_credentials.utils import auth_util

from gpulease.inventory.alicloud_clients import ENDPOINT_ENV, AlicloudClients
from gpulease.inventory.aws import ALLOWED_ACCOUNTS_ENV, REGIONS_ENV
from tests.support.alicloud_stub import Account, AlicloudStub, install

ACCESS_KEY_ID = "LTAI-gpulease-test"
ACCESS_KEY_SECRET = "gpulease-test-secret"
REGION = "cn-hangzhou"
OTHER_REGION = "cn-beijing"


@dataclass
class AliStub:
    stub: AlicloudStub
    account: Account

    @property
    def endpoint(self) -> str:
        return self.stub.endpoint

    def clients(self, **kwargs: Any) -> AlicloudClients:
        """Clients on the stub with a 1 ms backoff base, so retried throttles take milliseconds."""
        kwargs.setdefault("backoff_ms", 1)
        return AlicloudClients(endpoint=self.endpoint, **kwargs)

    def reset(self) -> None:
        self.account.reset()
        self.stub.faults.clear()
        with self.stub._lock:
            self.stub.calls.clear()


def offline_credentials(mp: pytest.MonkeyPatch, *, keys: bool = True) -> None:
    """Only the test keys count; the metadata service, OIDC, a credentials URI or file are never consulted.

    alibabacloud_credentials reads its environment once, at import (``utils/auth_util.py``), so the module's
    values are set here as well as the environment (which subprocesses read)."""
    key_id, secret = (ACCESS_KEY_ID, ACCESS_KEY_SECRET) if keys else (None, None)
    for name, value in {
        "environment_access_key_id": key_id,
        "environment_access_key_secret": secret,
        "environment_security_token": None,
        "environment_ecs_metadata_disabled": "true",
        "enable_oidc_credential": False,
        "environment_credentials_uri": None,
        "environment_credentials_file": "/nonexistent/gpulease-test-credentials",
        "environment_profile_name": None,
    }.items():
        mp.setattr(auth_util, name, value)
    for name in ("ALIBABA_CLOUD_PROFILE", "ALIBABA_CLOUD_CREDENTIALS_URI", "ALIBABA_CLOUD_ROLE_ARN",
                 "ALIBABA_CLOUD_OIDC_TOKEN_FILE", "ALIBABA_CLOUD_SECURITY_TOKEN", REGIONS_ENV, ALLOWED_ACCOUNTS_ENV):
        mp.delenv(name, raising=False)
    mp.setenv("ALIBABA_CLOUD_ECS_METADATA_DISABLED", "true")
    mp.setenv("ALIBABA_CLOUD_CREDENTIALS_FILE", "/nonexistent/gpulease-test-credentials")
    if keys:
        mp.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", ACCESS_KEY_ID)
        mp.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", ACCESS_KEY_SECRET)
    else:
        mp.delenv("ALIBABA_CLOUD_ACCESS_KEY_ID", raising=False)
        mp.delenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", raising=False)


@pytest.fixture(scope="session")
def ali_server() -> Iterator[AliStub]:
    stub = AlicloudStub({ACCESS_KEY_ID: ACCESS_KEY_SECRET}).start()
    account = Account()
    install(stub, account)
    try:
        yield AliStub(stub, account)
    finally:
        stub.stop()


@pytest.fixture
def ali(ali_server: AliStub, monkeypatch: pytest.MonkeyPatch) -> Iterator[AliStub]:
    """The stub with an empty account and no faults; the CLI's clients go to it."""
    ali_server.reset()
    offline_credentials(monkeypatch)
    monkeypatch.setenv(ENDPOINT_ENV, ali_server.endpoint)
    yield ali_server
    ali_server.reset()
