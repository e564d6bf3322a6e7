"""How the instance-side tools reach their cloud, shared by all of them (standard library only, Python 3.10).

- ``load_settings``: the settings file read strictly (a regular file, at most ``SETTINGS_MAX_BYTES``, strict
  UTF-8, a JSON object, no key written twice, nested at most ``SETTINGS_MAX_DEPTH`` deep, numbers of at most
  ``SETTINGS_MAX_NUMBER_CHARS`` characters);
- ``Metadata``: the metadata service in its hardened mode on both clouds (AWS IMDSv2, Alibaba Cloud's security
  hardening mode): a token from ``PUT /latest/api/token`` with a TTL header, sent with every GET; every request
  bounded by a total deadline, however slowly the service answers;
- ``RoleCredentials``: the instance role's temporary credentials, read through that token, refreshed before they
  expire;
- ``storage_command``: a storage CLI call (``aws`` / ``ossutil``) with an explicit credential source: the AWS CLI
  is told the metadata endpoint and forbidden the tokenless fallback; ossutil gets the role's STS credentials in
  a 0600 config file (``-c``) and an ``https://`` endpoint, never on its command line;
- ``run_bounded``: a child process with a wall-clock bound that holds even when the child leaves a daemon
  behind: its own process group, killed whole at the bound, output to a file (never a pipe a daemon can hold);
- ``ecs_call``: one signed Alibaba Cloud ECS API request (RPC style, HMAC-SHA1), for the self-release and the
  deadline;
- ``InstanceDeadline``: the instance's deadline from its own tag, through the metadata service, else (Alibaba
  Cloud) through the ECS API; the watchdog and the job agent read it the same way.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import http.client
import json
import math
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

try:
    from instance import bounds
except ImportError:  # on the instance: installed next to this file
    import bounds  # type: ignore[no-redef]

UTC = timezone.utc  # noqa: UP017 - the instance may run Python 3.10 (Ubuntu 22.04), before datetime.UTC

SETTINGS_MAX_BYTES = 256 * 1024
# Under the byte cap a file can still nest past the JSON decoder's recursion limit or hold an integer past Python's
# int-from-text limit (4,300 digits), each of which escapes as an exception that is not a SettingsError.
SETTINGS_MAX_DEPTH = 64
SETTINGS_MAX_NUMBER_CHARS = 100
METADATA_URLS = {"aws": "http://169.254.169.254", "alicloud": "http://100.100.100.200"}
# https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/configuring-instance-metadata-service.html (IMDSv2);
# https://www.alibabacloud.com/help/en/ecs/user-guide/view-instance-metadata (security hardening mode).
TOKEN_HEADERS = {
    "aws": ("X-aws-ec2-metadata-token-ttl-seconds", "X-aws-ec2-metadata-token"),
    "alicloud": ("X-aliyun-ecs-metadata-token-ttl-seconds", "X-aliyun-ecs-metadata-token"),
}
TOKEN_TTL_SECONDS = bounds.systemd_seconds("metadata_token_ttl")  # the longest either cloud issues (6 hours)
CREDENTIAL_PATHS = {
    "aws": "/latest/meta-data/iam/security-credentials/",
    "alicloud": "/latest/meta-data/ram/security-credentials/",
}
# Instance tags in metadata: AWS /latest/meta-data/tags/instance/<key> (instance_metadata_tags enabled); Alibaba
# Cloud's switch for the same (InstanceMetadataTags) is in invitational preview, so there the ECS API backs it up
# (InstanceDeadline; docs/provider-facts-instance.md).
TAG_PATH = "/latest/meta-data/tags/instance/"
REFRESH_BEFORE_EXPIRY_SECONDS = bounds.value("credentials_refresh_lead")
MAX_METADATA_BYTES = 64 * 1024
OSS_ENDPOINT = "https://oss-{region}-internal.aliyuncs.com"
# Environment that would point the AWS CLI at another credential source than the instance role, or switch IMDS off.
AWS_OTHER_CREDENTIAL_SOURCES = (
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_EC2_METADATA_DISABLED",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE",
)
ECS_ENDPOINT = "https://ecs.{region}.aliyuncs.com"
# The watchdog keeps the last deadline it read and the first boot here (under its state_dir); the job agent reads it.
WATCHDOG_STATE_FILE = "watchdog-state.json"


def utc_stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str) -> float:
    """RFC 3339 / ISO 8601 UTC text as epoch seconds (naive text is taken as UTC)."""
    moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


# --- settings --------------------------------------------------------------------------------------------------


class SettingsError(ValueError):
    """The settings file is missing, not a regular file, too large, not UTF-8, not a JSON object or ambiguous."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise SettingsError(f"key {key!r} is written twice")
        seen[key] = value
    return seen


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def _nesting_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON text (brackets inside strings do not count)."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub('""', text)):
        depth += 1 if match.group() in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _number(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def bounded(literal: str) -> Any:
        if len(literal) > SETTINGS_MAX_NUMBER_CHARS:
            raise SettingsError(
                f"a number of {len(literal)} characters; at most {SETTINGS_MAX_NUMBER_CHARS} accepted")
        value = parse(literal)
        if not math.isfinite(value):  # 1e999 reads as infinity: a deadline or a budget that is no number
            raise SettingsError(f"the number {literal[:40]} is not finite; accepted: a finite number")
        return value

    return bounded


def _no_constant(name: str) -> Any:
    raise SettingsError(f"{name} is not a number JSON allows; accepted: a finite number")


def load_settings(path: str, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """The settings object, read strictly; ``SettingsError`` names the file and what is wrong."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise SettingsError(f"{path}: cannot open: {exc.strerror or exc}") from exc
    try:
        info = os.fstat(fd)
        if not (info.st_mode & 0o170000 == 0o100000):
            raise SettingsError(f"{path}: not a regular file")
        if info.st_size > SETTINGS_MAX_BYTES:
            raise SettingsError(f"{path}: {info.st_size} bytes; at most {SETTINGS_MAX_BYTES} accepted")
        raw = os.read(fd, SETTINGS_MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > SETTINGS_MAX_BYTES:
        raise SettingsError(f"{path}: more than {SETTINGS_MAX_BYTES} bytes")
    try:
        text = raw.decode("utf-8", "strict")
    except UnicodeDecodeError as exc:
        raise SettingsError(f"{path}: not UTF-8 (byte {exc.start})") from exc
    depth = _nesting_depth(text)
    if depth > SETTINGS_MAX_DEPTH:
        raise SettingsError(f"{path}: nested {depth} deep; at most {SETTINGS_MAX_DEPTH} accepted")
    try:
        value = json.loads(
            text, object_pairs_hook=_no_duplicates, parse_int=_number(int), parse_float=_number(float),
            parse_constant=_no_constant)
    except RecursionError as exc:  # the depth check above should have caught it; never escape as another error
        raise SettingsError(f"{path}: nested too deep; at most {SETTINGS_MAX_DEPTH} accepted") from exc
    except SettingsError as exc:
        raise SettingsError(f"{path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise SettingsError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from exc
    if not isinstance(value, dict):
        raise SettingsError(f"{path}: expected a JSON object, found {type(value).__name__}")
    missing = [key for key in required if key not in value]
    if missing:
        raise SettingsError(f"{path}: expected a JSON object with {', '.join(repr(k) for k in missing)}")
    return value


# --- HTTP with a total deadline ---------------------------------------------------------------------------------


class HttpError(Exception):
    """No answer within the deadline, a refused connection, or an answer too large."""


def http_request(
    method: str, url: str, headers: dict[str, str], total: float, max_bytes: int = MAX_METADATA_BYTES
) -> tuple[int, bytes]:
    """(status, body) of one request, all of it (connect, headers, body) within ``total`` seconds.

    A per-read socket timeout alone does not bound a server that trickles its answer a byte at a time, so a
    timer shuts the socket down at the deadline, which ends any read in progress."""
    parts = urllib.parse.urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    end = time.monotonic() + total
    conn = cls(parts.hostname, parts.port, timeout=max(0.01, total))
    shut = bounds.ShutAtDeadline(conn, total)
    try:
        with shut:
            conn.request(method, path, headers=headers)
            resp = conn.getresponse()
            body = b""
            while True:
                chunk = resp.read1(65536)
                if not chunk:
                    break
                body += chunk
                if len(body) > max_bytes:
                    raise HttpError(f"{method} {parts.path}: answer larger than {max_bytes} bytes")
        if shut.expired.is_set() or time.monotonic() > end:
            raise HttpError(f"{method} {parts.path}: timed out after {total:.2f} s")
        return resp.status, body
    except HttpError:
        raise
    except (OSError, http.client.HTTPException, ValueError) as exc:
        if shut.expired.is_set():
            raise HttpError(f"{method} {parts.path}: timed out after {total:.2f} s") from exc
        raise HttpError(f"{method} {parts.path}: {exc}") from exc
    finally:
        conn.close()


# --- the metadata service ----------------------------------------------------------------------------------------


class MetadataError(Exception):
    """The metadata service timed out, refused or answered with an unexpected status."""


class Metadata:
    """The metadata service, token first on both clouds: the kit sets ``http_tokens = required`` everywhere, so
    a tokenless read is never attempted (it would be refused with 401/403)."""

    def __init__(self, cloud: str, base_url: str | None, timeout: float, monotonic: Callable[[], float] = time.monotonic,
                 real: Callable[[float], float] = lambda s: s):
        self.cloud = cloud if cloud in TOKEN_HEADERS else "aws"
        self.base = (base_url or METADATA_URLS[self.cloud]).rstrip("/")
        self.timeout = timeout
        self.monotonic = monotonic
        self.real = real
        self._token: str | None = None
        self._token_until = 0.0

    def _request(self, method: str, path: str, headers: dict[str, str]) -> tuple[int, str]:
        try:
            status, body = http_request(method, self.base + path, headers, self.real(self.timeout))
        except HttpError as exc:
            raise MetadataError(str(exc)) from exc
        return status, body.decode("utf-8", "replace")

    def token(self) -> str:
        ttl_header, _ = TOKEN_HEADERS[self.cloud]
        if self._token is None or self.monotonic() >= self._token_until:
            status, body = self._request("PUT", "/latest/api/token", {ttl_header: str(TOKEN_TTL_SECONDS)})
            if status != 200 or not body.strip():
                raise MetadataError(f"PUT /latest/api/token answered {status}")
            self._token = body.strip()
            self._token_until = self.monotonic() + TOKEN_TTL_SECONDS - 60
        return self._token

    def get(self, path: str) -> tuple[int, str]:
        """(status, body): 200 or 404; anything else raises ``MetadataError``."""
        _, token_header = TOKEN_HEADERS[self.cloud]
        status, body = self._request("GET", path, {token_header: self.token()})
        if status in (401, 403):  # the token expired early or was revoked: one fresh token, one more try
            self._token = None
            status, body = self._request("GET", path, {token_header: self.token()})
        if status not in (200, 404):
            raise MetadataError(f"GET {path} answered {status}")
        return status, body

    def value(self, path: str) -> str | None:
        status, body = self.get(path)
        return body.strip() if status == 200 and body.strip() else None

    def tag(self, key: str) -> str | None:
        """One of the instance's own tags (None when the service does not list it). The key goes in the path as it
        is: the characters AWS allows in a key exposed to metadata (letters, digits, ``+ - = . , _ : @``) are all
        valid in a URL path, and an encoded colon might not be decoded."""
        return self.value(TAG_PATH + urllib.parse.quote(key, safe="+-=.,_:@"))


# --- the role's credentials --------------------------------------------------------------------------------------


class CredentialsError(Exception):
    """The instance has no role, or its credentials could not be read."""


class RoleCredentials:
    """The instance role's temporary credentials from the metadata service, cached until five minutes before
    they expire (both clouds rotate them well before that)."""

    def __init__(self, metadata: Metadata, clock: Callable[[], float] = time.time):
        self.metadata = metadata
        self.clock = clock
        self.role: str | None = None
        self._cached: dict[str, str] | None = None
        self._until = 0.0

    def get(self) -> dict[str, str]:
        """{'id', 'secret', 'token', 'expiration'}."""
        if self._cached is not None and self.clock() < self._until:
            return self._cached
        base = CREDENTIAL_PATHS[self.metadata.cloud]
        try:
            if self.role is None:
                listed = self.metadata.value(base)
                if not listed:
                    raise CredentialsError("the instance has no role attached")
                self.role = listed.splitlines()[0].strip().strip("/")
            status, body = self.metadata.get(base + urllib.parse.quote(self.role, safe=""))
        except MetadataError as exc:
            raise CredentialsError(f"role credentials: {exc}") from exc
        if status != 200:
            self.role = None
            raise CredentialsError(f"role credentials: GET {base}<role> answered {status}")
        try:
            data = json.loads(body)
            creds = {
                "id": data["AccessKeyId"],
                "secret": data.get("SecretAccessKey") or data["AccessKeySecret"],
                "token": data.get("Token") or data["SecurityToken"],
                "expiration": data.get("Expiration", ""),
            }
        except (ValueError, KeyError, TypeError) as exc:
            raise CredentialsError(f"role credentials: unexpected answer ({type(exc).__name__})") from exc
        try:
            expires = parse_time(creds["expiration"])
        except ValueError:
            expires = self.clock() + 900
        self._cached = creds
        self._until = expires - REFRESH_BEFORE_EXPIRY_SECONDS
        return creds


# --- storage CLI calls ---------------------------------------------------------------------------------------------


class StorageCall:
    """One storage CLI call prepared with its credential source; ``close`` removes anything written for it.

    ``{oss_config}`` and ``{endpoint}`` in an Alibaba Cloud template are filled here; the credentials never
    appear in argv (where ``ps`` and the process table show them) nor in any log."""

    def __init__(self, argv: list[str], env: dict[str, str], secret_dir: str | None = None):
        self.argv = argv
        self.env = env
        self._dir = secret_dir

    def close(self) -> None:
        if self._dir:
            for name in os.listdir(self._dir):
                os.remove(os.path.join(self._dir, name))
            os.rmdir(self._dir)
            self._dir = None


def ossutil_config(endpoint: str, creds: dict[str, str]) -> str:
    """ossutil 1.x config file text: section ``Credentials`` with endpoint, accessKeyID, accessKeySecret and
    stsToken (the option names of ossutil's ``-c/--config-file``; aliyun/ossutil lib/option.go, lib/config.go)."""
    lines = ["[Credentials]", "language=EN", f"endpoint={endpoint}", f"accessKeyID={creds['id']}",
             f"accessKeySecret={creds['secret']}", f"stsToken={creds['token']}"]
    return "\n".join(lines) + "\n"


def storage_command(
    template: list[str], values: dict[str, str], *, cloud: str, region: str, metadata: Metadata,
    credentials: RoleCredentials | None, private_dir: str | None = None,
) -> StorageCall:
    """A storage CLI call with explicit credentials: ``CredentialsError`` when they cannot be had."""
    env = dict(os.environ)
    fill = {**values, "region": region, "endpoint": OSS_ENDPOINT.format(region=region), "oss_config": ""}
    secret_dir = None
    if cloud == "alicloud":
        if credentials is None:
            raise CredentialsError("no role credentials for ossutil")
        creds = credentials.get()
        secret_dir = tempfile.mkdtemp(prefix="gpulease-oss-", dir=private_dir)  # mode 0700
        path = os.path.join(secret_dir, "ossutil.cfg")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(ossutil_config(fill["endpoint"], creds))
        fill["oss_config"] = path
    else:
        # The AWS CLI reads the role's credentials from IMDS itself; it is told where IMDS is and forbidden the
        # IMDSv1 (tokenless) fallback (botocore: AWS_EC2_METADATA_SERVICE_ENDPOINT, AWS_EC2_METADATA_V1_DISABLED).
        env["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = metadata.base + "/"
        env["AWS_EC2_METADATA_V1_DISABLED"] = "true"
        for name in AWS_OTHER_CREDENTIAL_SOURCES:  # the instance role is the only credential
            env.pop(name, None)
    return StorageCall([part.format(**fill) for part in template], env, secret_dir)


# --- bounded child processes -------------------------------------------------------------------------------------


class Bounded:
    """A child in its own process group with its output in a file: ``poll`` never blocks, ``kill`` ends the
    whole group (whatever the child started in it), and nothing waits on a pipe a leftover daemon could hold."""

    def __init__(self, argv: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
                 monotonic: Callable[[], float] = time.monotonic):
        self.argv = argv
        self.monotonic = monotonic
        self.output = tempfile.TemporaryFile()  # noqa: SIM115 - read and closed in finish()
        self.started = monotonic()
        self.returncode: int | None = None
        try:
            self.proc: subprocess.Popen | None = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=self.output, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                start_new_session=True,
            )
        except OSError:
            self.output.close()
            raise

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc else -1

    def poll(self) -> int | None:
        if self.proc is not None and self.returncode is None:
            self.returncode = self.proc.poll()
        return self.returncode

    def kill(self) -> None:
        """SIGKILL to the whole group, then reap the leader (it cannot outlive SIGKILL)."""
        if self.proc is None:
            return
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        try:
            self.returncode = self.proc.wait(timeout=bounds.value("kill_reap"))
        except subprocess.TimeoutExpired:  # pragma: no cover - a process in uninterruptible sleep
            self.returncode = -9

    def tail(self, limit: int = 300) -> str:
        try:
            self.output.seek(0, os.SEEK_END)
            size = self.output.tell()
            self.output.seek(max(0, size - 4 * limit))
            return self.output.read().decode("utf-8", "replace").strip()[-limit:]
        except (OSError, ValueError):
            return ""

    def finish(self) -> str:
        text = self.tail()
        self.output.close()
        return text


def run_bounded(
    argv: list[str], timeout: float, *, env: dict[str, str] | None = None, cwd: str | None = None,
    cancel: threading.Event | None = None, step: float = 0.05,
) -> tuple[int | None, str]:
    """(exit status or None when cut short, output tail): ``argv`` run for at most ``timeout`` real seconds.

    Waits by polling, so that a daemon the child leaves behind (holding the output file) never blocks it; at
    the bound or on ``cancel`` the whole process group is killed. A command that cannot start is status 127."""
    try:
        job = Bounded(argv, env=env, cwd=cwd)
    except OSError as exc:
        return 127, f"could not run: {exc}"
    end = time.monotonic() + max(0.0, timeout)
    pause = 0.001  # most commands end within milliseconds: look often at first, then every ``step``
    while job.poll() is None:
        if time.monotonic() >= end or (cancel is not None and cancel.is_set()):
            job.kill()
            return None, job.finish()
        time.sleep(pause)
        pause = min(step, pause * 2)
    return job.returncode, job.finish()


def run_bounded_split(
    argv: list[str], timeout: float, *, env: dict[str, str] | None = None, max_stdout: int = 8 * 1024 * 1024,
) -> tuple[int | None, str, str]:
    """``run_bounded`` keeping stdout (up to ``max_stdout``) apart from stderr (its tail): for a CLI whose output
    is parsed. Both go to files, never pipes."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                                    start_new_session=True)
        except OSError as exc:
            return 127, "", str(exc)
        end = time.monotonic() + max(0.0, timeout)
        code, pause = proc.poll(), 0.001
        while code is None and time.monotonic() < end:
            time.sleep(pause)
            pause = min(0.02, pause * 2)
            code = proc.poll()
        if code is None:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        out.seek(0)
        err.seek(0, os.SEEK_END)
        err.seek(max(0, err.tell() - 4096))
        return code, out.read(max_stdout).decode("utf-8", "replace"), err.read().decode("utf-8", "replace")


# --- the ECS API (Alibaba Cloud) ---------------------------------------------------------------------------------


def percent_encode(text: str) -> str:
    """RFC 3986 encoding as the RPC signature requires: only A-Z a-z 0-9 - _ . ~ stay as they are."""
    return urllib.parse.quote(text, safe="-_.~")


def rpc_signature(method: str, params: dict[str, str], secret: str) -> str:
    """Signature V1 of an RPC-style request (SignatureMethod HMAC-SHA1, SignatureVersion 1.0): Base64 of
    HMAC-SHA1(secret + "&", method & %2F & percent-encoded sorted query), per Alibaba Cloud's "Request
    signatures" reference for RPC APIs."""
    canonical = "&".join(f"{percent_encode(k)}={percent_encode(v)}" for k, v in sorted(params.items()))
    to_sign = f"{method}&{percent_encode('/')}&{percent_encode(canonical)}"
    digest = hmac.new((secret + "&").encode(), to_sign.encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


def ecs_call(
    action: str, params: dict[str, str], creds: dict[str, str], *, region: str, endpoint: str | None = None,
    timeout: float = bounds.value("ecs_read"), now: float | None = None,
) -> tuple[int, dict[str, Any]]:
    """(HTTP status, decoded answer) of one ECS API call (version 2014-05-26) signed with STS credentials."""
    query = {
        "Action": action,
        "Version": "2014-05-26",
        "Format": "JSON",
        "RegionId": region,
        "AccessKeyId": creds["id"],
        "SecurityToken": creds["token"],
        "SignatureMethod": "HMAC-SHA1",
        "SignatureVersion": "1.0",
        "SignatureNonce": uuid.uuid4().hex,
        "Timestamp": utc_stamp(time.time() if now is None else now),
        **params,
    }
    query["Signature"] = rpc_signature("GET", query, creds["secret"])
    base = (endpoint or ECS_ENDPOINT).format(region=region).rstrip("/")
    url = base + "/?" + "&".join(f"{percent_encode(k)}={percent_encode(v)}" for k, v in query.items())
    status, body = http_request("GET", url, {}, timeout)
    try:
        answer = json.loads(body.decode("utf-8", "replace") or "{}")
    except ValueError:
        answer = {"raw": body[:200].decode("utf-8", "replace")}
    return status, answer if isinstance(answer, dict) else {"raw": str(answer)[:200]}


# --- the instance's deadline ------------------------------------------------------------------------------------


class DeadlineUnreadError(Exception):
    """No source answered with the deadline; the message names each source tried and why it failed."""


class InstanceDeadline:
    """The instance's deadline (epoch seconds), from where the cloud offers it, in this order:

    1. its own tag through the metadata service (``/latest/meta-data/tags/instance/<key>``): documented on AWS
       (``instance_metadata_tags``); on Alibaba Cloud the same switch (``InstanceMetadataTags``) is documented as
       "in invitational preview and not publicly available", so it may not answer there;
    2. with ``api`` (Alibaba Cloud): ``DescribeInstances`` for this one instance through the ECS API, signed with
       the role's STS credentials (its RAM policy allows exactly that instance): the tag, else ``AutoReleaseTime``
       (the deadline floored to the minute, set by the stack). Called at most every ``api_interval`` seconds; in
       between, its last answer stands.

    The fallbacks after these (the last value read, first boot + max runtime) belong to the caller, which keeps
    that state."""

    def __init__(self, metadata: Metadata, credentials: RoleCredentials | None, *, tag: str, region: str,
                 api: bool = False, endpoint: str | None = None, timeout: float = bounds.value("ecs_read"), api_interval: float = 60.0,
                 monotonic: Callable[[], float] = time.monotonic, real: Callable[[float], float] = lambda s: s):
        self.metadata = metadata
        self.credentials = credentials
        self.tag = tag
        self.region = region
        self.api = api and credentials is not None
        self.endpoint = endpoint
        self.timeout = timeout
        self.api_interval = api_interval
        self.monotonic = monotonic
        self.real = real
        self._instance: str | None = None
        self._api_at: float | None = None
        self._api_answer: tuple[float, str] | str = "not asked yet"

    def read(self) -> tuple[float, str]:
        """(deadline, where it was read), or ``DeadlineUnreadError``."""
        problems = []
        text = None
        try:
            text = self.metadata.tag(self.tag)
            if text is None:
                problems.append(f"tag {self.tag} is not in the instance metadata")
            else:
                return parse_time(text), "tag through the metadata service"
        except MetadataError as exc:
            problems.append(f"tag {self.tag} through the metadata service: {exc}")
        except ValueError:
            problems.append(f"tag {self.tag}={text!r} is not an RFC 3339 time")
        if self.api:
            now = self.monotonic()
            if self._api_at is None or now - self._api_at >= self.api_interval:
                self._api_at = now
                try:
                    self._api_answer = self._from_api()
                except (DeadlineUnreadError, MetadataError, CredentialsError, HttpError, ValueError) as exc:
                    self._api_answer = f"ECS API: {exc}"
            if isinstance(self._api_answer, tuple):
                return self._api_answer
            problems.append(self._api_answer)
        raise DeadlineUnreadError("; ".join(problems))

    def _from_api(self) -> tuple[float, str]:
        if self._instance is None:
            self._instance = self.metadata.value("/latest/meta-data/instance-id")
            if not self._instance:
                raise DeadlineUnreadError("no instance-id in the metadata")
        if self.credentials is None:
            raise DeadlineUnreadError("no role credentials for the ECS API")
        status, answer = ecs_call(
            "DescribeInstances", {"InstanceIds": json.dumps([self._instance])}, self.credentials.get(),
            region=self.region, endpoint=self.endpoint, timeout=self.real(self.timeout),
        )
        if status != 200:
            raise DeadlineUnreadError(f"DescribeInstances answered {status}: {answer.get('Code', '')} "
                                 f"{str(answer.get('Message', ''))[:200]}".rstrip())
        listed = (answer.get("Instances") or {}).get("Instance") or []
        mine = [i for i in listed if isinstance(i, dict) and i.get("InstanceId") == self._instance]
        if not mine:
            # DescribeInstances lists nothing (rather than failing) for an instance the caller may not see.
            raise DeadlineUnreadError(f"DescribeInstances did not list {self._instance}")
        tags = {t.get("TagKey"): t.get("TagValue") for t in ((mine[0].get("Tags") or {}).get("Tag") or [])
                if isinstance(t, dict)}
        if tags.get(self.tag):
            return parse_time(str(tags[self.tag])), "tag through the ECS API"
        if mine[0].get("AutoReleaseTime"):
            return parse_time(str(mine[0]["AutoReleaseTime"])), "AutoReleaseTime through the ECS API"
        raise DeadlineUnreadError(f"{self._instance} has no {self.tag} tag and no AutoReleaseTime")


def saved_state(state_dir: str) -> dict[str, Any]:
    """The watchdog's saved state (``{}`` when there is none or it cannot be read)."""
    try:
        return load_settings(os.path.join(state_dir, WATCHDOG_STATE_FILE))
    except SettingsError:
        return {}
