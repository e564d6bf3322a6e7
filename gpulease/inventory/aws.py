"""boto3 clients for the inventory and the reaper: one session, botocore retry modes, timeouts, tag filters.

Throttling and transient 5xx answers are retried by botocore itself (``standard`` or ``adaptive`` mode; the
adaptive mode also rate-limits the client when the service throttles), never by a loop of ours. Every call is
bounded by botocore's ``Config``: ``connect_timeout`` and ``read_timeout`` per attempt and ``max_attempts`` in
all, so one call takes at most ``max_attempts * (connect_timeout + read_timeout)`` plus botocore's backoff
(standard mode: a random delay up to ``2 ** attempt`` seconds, capped at 20 s; botocore/retries/standard.py),
even against an endpoint that accepts connections and never answers. ``worst_case_seconds`` states that bound.
"""

from __future__ import annotations

import gc
import os
import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    InvalidRegionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ProfileNotFound,
    ReadTimeoutError,
)
from botocore.utils import parse_timestamp
from dateutil.tz import tzutc

from gpulease.core.errors import UserError
from gpulease.core.vocabulary import MANAGED_BY_VALUE, TAG_MANAGED_BY

RETRY_MODES = ("standard", "adaptive")
DEFAULT_RETRY_MODE = "standard"
DEFAULT_MAX_ATTEMPTS = 4
DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_READ_TIMEOUT = 15.0
BACKOFF_CAP_SECONDS = 20.0  # botocore standard mode's MAX_BACKOFF

# Errors that mean the credentials or the profile are missing or wrong: the user's to fix (exit 2).
CREDENTIAL_ERRORS: tuple[type[Exception], ...] = (
    NoCredentialsError,
    PartialCredentialsError,
    ProfileNotFound,
    NoRegionError,
    InvalidRegionError,
)
# Errors that mean the endpoint cannot be reached (refused, timed out after every attempt): the rest of that
# region's calls would only wait the same way, so a listing stops there.
UNREACHABLE_ERRORS: tuple[type[Exception], ...] = (
    EndpointConnectionError,
    ConnectTimeoutError,
    ReadTimeoutError,
    ConnectionClosedError,
)

REGIONS_ENV = "GPULEASE_REGIONS"
ALLOWED_ACCOUNTS_ENV = "GPULEASE_ALLOWED_ACCOUNTS"


class AwsTargetError(UserError):
    """No region to look at, or an account the sweep must not touch."""


class AwsCredentialsError(UserError):
    """No usable credentials, or a profile that does not exist."""


def timestamp(value: Any) -> Any:
    """botocore's timestamp parser (``botocore.utils.parse_timestamp``), with the form EC2 answers in
    (``2026-12-02T02:37:08.000Z``) read by the standard library: the same aware datetime, in the same ``tzutc``,
    for a small fraction of the CPU of dateutil's general parser (which read every launch, create and start time of
    a listing). Anything else goes to botocore's parser as before."""
    if isinstance(value, str) and value.endswith("Z") and "T" in value:
        try:
            parsed = datetime.fromisoformat(value[:-1])
        except ValueError:
            parsed = None
        if parsed is not None and parsed.tzinfo is None:
            return parsed.replace(tzinfo=tzutc())
    return parse_timestamp(value)


def credentials_problem(exc: Exception) -> AwsCredentialsError:
    """One line for a credential or profile error, saying what is accepted."""
    return AwsCredentialsError(
        f"AWS credentials: {exc}. Pass --profile NAME (a profile of ~/.aws/config) or set AWS_ACCESS_KEY_ID/"
        "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO or an instance/OIDC role (the standard AWS credential chain)"
    )


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


@dataclass
class AwsClients:
    """Creates (once per service and region) the clients a listing or a sweep needs, all sharing one session.

    ``session.events`` is where callers hook botocore events (call counting, fault injection); hooks registered
    before the first client is created apply to every client. Passing a ``session`` reuses its loaded models.

    With ``freeze_models`` (the command line's clients, ``options.clients_from_args``), each client is created with
    the cyclic garbage collector paused and everything then alive is frozen (``gc.freeze``), as the command line
    does after its imports (``gpulease.cli.main.imports_frozen``). A client brings a service model, a class with a
    method per operation (over 800 for EC2) and a copy of the session's hooks (botocore ``client.py:
    ClientCreator.create_client``): tens of thousands of objects that live as long as the process. Unfrozen, every
    collection the listing's allocations start walks them again, one set per region: about half of the listing's
    CPU time over ten regions (bench/README.md, ``inventory_regions.py``). Frozen objects are still freed by
    reference counting; only cyclic garbage alive at the moment of a freeze stays until the process ends (once per
    client built). ``gpulease.cli.main.main`` called with an argument list (a longer-lived process) gives every
    frozen object back to the collector when it returns."""

    profile: str | None = None
    endpoint_url: str | None = None
    retry_mode: str = DEFAULT_RETRY_MODE
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    max_pool_connections: int = 16
    session: boto3.Session | None = None
    freeze_models: bool = False
    _clients: dict[tuple[str, str | None], Any] = field(init=False, default_factory=dict)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.retry_mode not in RETRY_MODES:
            raise AwsTargetError(f"retry mode {self.retry_mode!r} is not one of {', '.join(RETRY_MODES)}")
        if self.session is None:
            try:
                self.session = boto3.Session(profile_name=self.profile)
            except ProfileNotFound as exc:
                raise credentials_problem(exc) from None
        # Every client of the session parses timestamps with ``timestamp`` (botocore's documented parser default).
        core = getattr(self.session, "_session", None)
        if core is not None:
            core.get_component("response_parser_factory").set_parser_defaults(timestamp_parser=timestamp)

    @property
    def config(self) -> Config:
        # total_max_attempts counts the first attempt too (botocore's retries config), as --max-attempts does.
        return Config(
            retries={"mode": self.retry_mode, "total_max_attempts": self.max_attempts},
            connect_timeout=self.connect_timeout,
            read_timeout=self.read_timeout,
            max_pool_connections=self.max_pool_connections,
            user_agent_extra="gpulease-inventory",
        )

    def worst_case_seconds(self) -> float:
        """The longest one call can take: every attempt timing out, plus botocore's largest backoffs."""
        backoff = sum(min(BACKOFF_CAP_SECONDS, 2.0**n) for n in range(1, self.max_attempts))
        return self.max_attempts * (self.connect_timeout + self.read_timeout) + backoff

    def client(self, service: str, region: str | None = None) -> Any:
        key = (service, region)
        with self._lock:
            if key not in self._clients:
                kwargs: dict[str, Any] = {"config": self.config}
                if region:
                    kwargs["region_name"] = region
                if self.endpoint_url:
                    kwargs["endpoint_url"] = self.endpoint_url
                self._clients[key] = self._create(service, kwargs)
            return self._clients[key]

    def _create(self, service: str, kwargs: dict[str, Any]) -> Any:
        if not self.freeze_models:
            return self.session.client(service, **kwargs)
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return self.session.client(service, **kwargs)
        finally:
            gc.freeze()
            if was_enabled:
                gc.enable()

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
