"""boto3 clients for the inventory and the reaper: one session, botocore retry modes, server-side tag filters.

Throttling and transient 5xx answers are retried by botocore itself (``standard`` or ``adaptive`` mode; the
adaptive mode also rate-limits the client when the service throttles), never by a loop of ours.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from components.errors import UserError
from components.vocabulary import MANAGED_BY_VALUE, TAG_MANAGED_BY

RETRY_MODES = ("standard", "adaptive")
DEFAULT_RETRY_MODE = "standard"
DEFAULT_MAX_ATTEMPTS = 8

REGIONS_ENV = "GPULEASE_REGIONS"
ALLOWED_ACCOUNTS_ENV = "GPULEASE_ALLOWED_ACCOUNTS"


class AwsTargetError(UserError):
    """No region to look at, or an account the sweep must not touch."""


def managed_filter() -> list[dict[str, Any]]:
    """The server-side filter that selects only resources gpulease manages."""
    return [{"Name": f"tag:{TAG_MANAGED_BY}", "Values": [MANAGED_BY_VALUE]}]


def not_found(exc: Exception) -> bool:
    """An EC2 answer saying the resource (or one of the ids asked for) no longer exists."""
    return isinstance(exc, ClientError) and exc.response.get("Error", {}).get("Code", "").endswith("NotFound")


def split_list(values: list[str] | None, env_name: str) -> list[str]:
    """Values given on the command line, else the comma-separated environment variable; order kept, no repeats."""
    raw: list[str] = []
    for value in values or []:
        raw.extend(value.split(","))
    if not raw:
        raw = os.environ.get(env_name, "").split(",")
    seen: dict[str, None] = {}
    for item in raw:
        item = item.strip()
        if item:
            seen[item] = None
    return list(seen)


def resolve_regions(values: list[str] | None) -> list[str]:
    regions = split_list(values, REGIONS_ENV)
    if not regions:
        raise AwsTargetError(
            f"no region given: pass --region REGION (repeatable) or set {REGIONS_ENV}=us-east-1,us-west-2"
        )
    return regions


@dataclass
class AwsClients:
    """Creates (once per service and region) the clients a listing or a sweep needs, all sharing one session.

    ``session.events`` is where callers hook botocore events (call counting, fault injection); hooks registered
    before the first client is created apply to every client. Passing a ``session`` reuses its loaded models."""

    profile: str | None = None
    endpoint_url: str | None = None
    retry_mode: str = DEFAULT_RETRY_MODE
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    max_pool_connections: int = 16
    session: boto3.Session | None = None
    _clients: dict[tuple[str, str | None], Any] = field(init=False, default_factory=dict)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.retry_mode not in RETRY_MODES:
            raise AwsTargetError(f"retry mode {self.retry_mode!r} is not one of {', '.join(RETRY_MODES)}")
        if self.session is None:
            self.session = boto3.Session(profile_name=self.profile)

    @property
    def config(self) -> Config:
        return Config(
            retries={"mode": self.retry_mode, "max_attempts": self.max_attempts},
            max_pool_connections=self.max_pool_connections,
            user_agent_extra="gpulease-inventory",
        )

    def client(self, service: str, region: str | None = None) -> Any:
        key = (service, region)
        with self._lock:
            if key not in self._clients:
                kwargs: dict[str, Any] = {"config": self.config}
                if region:
                    kwargs["region_name"] = region
                if self.endpoint_url:
                    kwargs["endpoint_url"] = self.endpoint_url
                self._clients[key] = self.session.client(service, **kwargs)
            return self._clients[key]

    def ec2(self, region: str) -> Any:
        return self.client("ec2", region)

    def tagging(self, region: str) -> Any:
        return self.client("resourcegroupstaggingapi", region)

    def account_id(self, region: str | None = None) -> str:
        return self.client("sts", region).get_caller_identity()["Account"]


def check_account(account: str, allowed: list[str]) -> None:
    """Refuse to act in an account that is not on the allowlist (when one is configured)."""
    if allowed and account not in allowed:
        raise AwsTargetError(
            f"account {account} is not on the allowlist ({', '.join(allowed)}); "
            f"pass --allowed-account {account} or set {ALLOWED_ACCOUNTS_ENV} if this account is meant to be swept"
        )
