"""Alibaba Cloud clients for the inventory and the reaper: the official SDKs, configured, never hand-rolled.

- Credentials: ``alibabacloud_credentials``' default chain (environment, OIDC, the CLI's ``~/.aliyun/config.json``,
  ``~/.alibabacloud/credentials``, the ECS RAM role), or one CLI profile with ``--profile``.
- ECS (``alibabacloud_ecs20140526``), VPC for EIPs (``alibabacloud_vpc20160428``), STS for the account check
  (``alibabacloud_sts20150401``), all on ``alibabacloud_tea_openapi``: connect/read timeouts and the retry policy
  are set in its ``Config``. In tea-openapi 0.4.6 the retry loop (``Client.do_request``) reads only
  ``Config.retry_options`` (darabonba ``RetryOptions``: retry conditions by error code and exception name, each
  with its own attempt cap and backoff); ``RuntimeOptions.autoretry``/``max_attempts`` are not read there.
  Retried: the throttling codes (``Throttling``, ``Throttling.User``, ``Throttling.Api``, ...), 5xx answers
  (``ServerException``) and transport errors (``RetryError``: refused, reset, timed out). One call therefore takes
  at most ``max_attempts * (connect_timeout + read_timeout)`` plus the backoffs (``worst_case_seconds``).
- OSS (``alibabacloud-oss-v2``) for buckets: its own ``StandardRetryer`` with the same attempt count and timeouts.

``endpoint`` (or ``GPULEASE_ALICLOUD_ENDPOINT``, e.g. ``http://127.0.0.1:8080``) sends every product to one
endpoint: a private gateway or the test stub. Without it each SDK resolves its regional public endpoint.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from alibabacloud_credentials.client import Client as CredentialClient
from alibabacloud_credentials.exceptions import CredentialException
from alibabacloud_credentials.provider import CLIProfileCredentialsProvider
from alibabacloud_ecs20140526.client import Client as EcsClient
from alibabacloud_sts20150401.client import Client as StsClient
from alibabacloud_tea_openapi.models import Config
from alibabacloud_vpc20160428.client import Client as VpcClient
from darabonba.policy.retry import RetryCondition, RetryOptions

from gpulease.core.errors import UserError

ENDPOINT_ENV = "GPULEASE_ALICLOUD_ENDPOINT"

# Error codes Alibaba Cloud answers when it throttles (ECS/VPC API references, "Throttling*" error codes).
THROTTLING_CODES = ["Throttling", "Throttling.User", "Throttling.Api", "Throttling.Resource", "ServiceUnavailable"]
# darabonba exception names: 5xx answers, throttling answers with a Retry-After, transport failures.
RETRIED_EXCEPTIONS = ["ServerException", "ThrottlingException", "RetryError"]
BACKOFF_CAP_MS = 20_000


class AlicloudCredentialsError(UserError):
    """No usable Alibaba Cloud credentials, or a profile that does not exist."""


def credentials_problem(exc: BaseException) -> AlicloudCredentialsError:
    text = " ".join(str(getattr(exc, "message", exc)).split())
    if len(text) > 300:
        text = text[:300] + "..."
    return AlicloudCredentialsError(
        f"Alibaba Cloud credentials: {text}. Set ALIBABA_CLOUD_ACCESS_KEY_ID/ALIBABA_CLOUD_ACCESS_KEY_SECRET, "
        "pass --profile NAME (a profile of ~/.aliyun/config.json), or run where a RAM role or OIDC token is available"
    )


@dataclass
class AlicloudClients:
    """Creates (once per product and region) the SDK clients a listing or a sweep needs, sharing one credential."""

    profile: str | None = None
    endpoint: str | None = None
    max_attempts: int = 4
    connect_timeout: float = 5.0
    read_timeout: float = 15.0
    backoff_ms: int = 200
    _credential: CredentialClient | None = field(init=False, default=None)
    _clients: dict[tuple[str, str], Any] = field(init=False, default_factory=dict)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.endpoint = self.endpoint or os.environ.get(ENDPOINT_ENV) or None

    def credential(self) -> CredentialClient:
        if self._credential is None:
            if self.profile:
                provider = CLIProfileCredentialsProvider(profile_name=self.profile)
                self._credential = CredentialClient(provider=provider)
            else:
                self._credential = CredentialClient()
        return self._credential

    def check_credentials(self) -> None:
        """Resolve the credentials now, so a missing key or profile is one clear error before any call."""
        try:
            self.credential().get_credential()
        except (CredentialException, OSError, ValueError, KeyError) as exc:
            raise credentials_problem(exc) from None

    def retry_options(self) -> RetryOptions:
        backoff = {"policy": "ExponentialWithEqualJitter", "period": self.backoff_ms, "cap": BACKOFF_CAP_MS}
        condition = RetryCondition(
            max_attempts=self.max_attempts,
            error_code=THROTTLING_CODES,
            exception=RETRIED_EXCEPTIONS,
            backoff=backoff,
            max_delay=BACKOFF_CAP_MS,
        )
        return RetryOptions(retryable=True, retry_condition=[condition])

    def config(self, region: str) -> Config:
        config = Config(
            credential=self.credential(),
            region_id=region,
            connect_timeout=int(self.connect_timeout * 1000),
            read_timeout=int(self.read_timeout * 1000),
            retry_options=self.retry_options(),
            user_agent="gpulease-inventory",
        )
        if self.endpoint:
            parts = urlsplit(self.endpoint if "://" in self.endpoint else f"https://{self.endpoint}")
            config.endpoint = parts.netloc
            config.protocol = parts.scheme
        return config

    def _client(self, product: str, region: str, factory: Any) -> Any:
        key = (product, region)
        with self._lock:
            if key not in self._clients:
                self._clients[key] = factory(self.config(region))
            return self._clients[key]

    def ecs(self, region: str) -> EcsClient:
        return self._client("ecs", region, EcsClient)

    def vpc(self, region: str) -> VpcClient:
        return self._client("vpc", region, VpcClient)

    def sts(self, region: str) -> StsClient:
        return self._client("sts", region, StsClient)

    def account_id(self, region: str) -> str:
        return str(self.sts(region).get_caller_identity().body.account_id)

    def worst_case_seconds(self) -> float:
        """The longest one call can take: every attempt timing out, plus the largest backoffs."""
        backoff = sum(min(BACKOFF_CAP_MS, self.backoff_ms * 2**n) for n in range(1, self.max_attempts)) / 1000
        return self.max_attempts * (self.connect_timeout + self.read_timeout) + backoff

    def oss(self, region: str) -> Any:
        """An OSS v2 client for ``region``, on the same credentials, attempts and timeouts."""
        import alibabacloud_oss_v2 as oss

        credential = self.credential()

        def fetch() -> Any:
            model = credential.get_credential()
            return oss.credentials.Credentials(
                access_key_id=model.access_key_id,
                access_key_secret=model.access_key_secret,
                security_token=model.security_token or None,
            )

        config = oss.config.load_default()
        config.credentials_provider = oss.credentials.CredentialsProviderFunc(func=fetch)
        config.region = region
        config.retryer = oss.retry.StandardRetryer(max_attempts=self.max_attempts, base_delay=self.backoff_ms / 1000)
        config.connect_timeout = self.connect_timeout
        config.readwrite_timeout = self.read_timeout
        if self.endpoint:
            parts = urlsplit(self.endpoint if "://" in self.endpoint else f"https://{self.endpoint}")
            config.endpoint = parts.netloc
            config.disable_ssl = parts.scheme == "http"
            config.use_path_style = True
        return self._client("oss", region, lambda _config: oss.Client(config))
