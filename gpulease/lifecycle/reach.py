"""Why a cloud call of ``gpulease check`` failed: the network (the endpoint was not reached, so the credentials were
never asked) or the credentials (none found, or the cloud refused them). Each has its own fix.

- botocore: a transport failure is a ``botocore.exceptions.ConnectionError`` (``EndpointConnectionError`` for a
  refused connection or a name that does not resolve, ``ConnectTimeoutError``, ``ProxyConnectionError``) or an
  ``HTTPClientError`` (``ReadTimeoutError``, ``ConnectionClosedError``): the classes of ``botocore/exceptions.py``;
  credentials the SDK cannot find are ``NoCredentialsError`` / ``PartialCredentialsError``; a refused key is a
  ``ClientError`` with the STS code (``InvalidClientTokenId``, ``SignatureDoesNotMatch``, ``ExpiredToken``: the
  common errors of https://docs.aws.amazon.com/STS/latest/APIReference/CommonErrors.html).
- The Alibaba Cloud SDKs (darabonba): a transport failure ends as ``UnretryableException`` wrapping the
  ``requests`` error (``darabonba/exceptions.py``: an answer from the server is re-raised as itself, so what is
  wrapped never reached it); a refused key is an answer with its code (``InvalidAccessKeyId.NotFound``,
  ``SignatureDoesNotMatch``).

What kind of network failure it was is read from the transport's message (urllib3's ``NameResolutionError``,
``Connection refused``, ``timed out``): said when recognised, never needed for the verdict."""

from __future__ import annotations

import sys
from dataclasses import dataclass

NETWORK_FIX = ("check this machine's network to that endpoint: DNS, a proxy (HTTPS_PROXY / NO_PROXY), a firewall or "
               "a VPN; then gpulease check again (the credentials are asked once it is reached)")

_KINDS = (
    (("NameResolutionError", "Name or service not known", "nodename nor servname", "getaddrinfo", "no such host",
      "Temporary failure in name resolution"), "the host name does not resolve (DNS)"),
    (("Connection refused", "ECONNREFUSED"), "the connection was refused"),
    (("Network is unreachable", "No route to host", "ENETUNREACH", "EHOSTUNREACH"), "no route to it"),
    (("timed out", "Timeout", "timeout", "deadline exceeded"), "no answer in time (timed out)"),
)
UNKNOWN_KIND = "the connection failed"
EXPIRED_CODES = frozenset(("ExpiredToken", "ExpiredTokenException", "RequestExpired", "InvalidSecurityToken.Expired"))


@dataclass(frozen=True)
class Unreached:
    """The endpoint was not reached: ``kind`` (DNS, refused, no route, timeout) and the transport's own words."""

    endpoint: str
    kind: str
    text: str

    def detail(self, cloud: str) -> str:
        return f"cannot reach {cloud} at {self.endpoint}: {self.kind} ({self.text})"


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


def network_kind(text: str) -> str:
    for words, kind in _KINDS:
        if any(word in text for word in words):
            return kind
    return UNKNOWN_KIND


def aws_unreached(exc: BaseException, endpoint: str) -> Unreached | None:
    """An ``Unreached`` when ``exc`` is botocore's transport failure, else None."""
    botocore = sys.modules.get("botocore.exceptions")
    if botocore is None or not isinstance(exc, botocore.ConnectionError | botocore.HTTPClientError):
        return None
    cause = getattr(exc, "kwargs", {}).get("error")
    text = f"{exc} {cause}" if cause is not None else str(exc)
    return Unreached(endpoint, network_kind(text), _short(exc))


def aws_credentials_problem(exc: BaseException) -> tuple[str, str] | None:
    """(what, fix) for credentials botocore cannot find or STS refuses, else None."""
    botocore = sys.modules.get("botocore.exceptions")
    if botocore is None:
        return None
    if isinstance(exc, botocore.NoCredentialsError | botocore.PartialCredentialsError):
        return (f"no AWS credentials found ({_short(exc)})",
                "aws configure / aws sso login, or set AWS_PROFILE (https://docs.aws.amazon.com/cli/latest/userguide/"
                "cli-chap-authentication.html)")
    if isinstance(exc, botocore.ClientError):
        error = exc.response.get("Error") or {}
        code = str(error.get("Code") or "?")
        what = f"AWS refused the credentials: {code}: {_short(error.get('Message') or '')}"
        if code in EXPIRED_CODES:
            return what, "the session has expired: aws sso login (or fresh keys for AWS_SESSION_TOKEN)"
        return what, ("the key is wrong, deactivated or of another account: aws configure, or choose the profile with "
                      "AWS_PROFILE")
    return None


def alicloud_unreached(exc: BaseException, endpoint: str) -> Unreached | None:
    """An ``Unreached`` when ``exc`` is the Alibaba Cloud SDK's transport failure (or ``requests``' own), else None."""
    tea = sys.modules.get("Tea.exceptions")
    requests = sys.modules.get("requests.exceptions")
    wrapped = tea is not None and isinstance(exc, tea.UnretryableException)
    raw = requests is not None and isinstance(exc, requests.ConnectionError | requests.Timeout)
    if not (wrapped or raw):
        return None
    inner = getattr(exc, "inner_exception", None) or exc
    text = str(getattr(inner, "message", None) or inner)
    return Unreached(endpoint, network_kind(text), _short(text))


def alicloud_refused(exc: BaseException) -> str | None:
    """The refusal of an answer that carries an error code (the key unknown, the signature wrong), else None."""
    code = getattr(exc, "code", None)
    if not code:
        return None
    return f"Alibaba Cloud refused the credentials: {code}: {_short(getattr(exc, 'message', '') or exc)}"
