"""A loopback HTTP server that answers Alibaba Cloud RPC calls (ECS, VPC, STS) and the OSS calls the kit makes.

The official SDKs run against it unchanged, through their endpoint setting (``127.0.0.1:PORT`` over ``http``).

RPC requests (tea-openapi's default ACS3 signature, ``x-acs-action``/``x-acs-version`` headers, parameters in the
query string and/or a form body) are checked the way the service does before a handler runs:
- the ``Authorization`` header is verified: ``ACS3-HMAC-SHA256 Credential=<AccessKeyId>,SignedHeaders=...,
  Signature=...``, recomputed from the canonical request (method, path, sorted percent-encoded query, the signed
  headers, the payload's SHA-256) with the access key's secret, as the V3 signature reference describes
  (https://www.alibabacloud.com/help/en/sdk/product-overview/v3-request-structure-and-signature);
  an unknown key answers ``InvalidAccessKeyId.NotFound`` (404), a wrong signature ``SignatureDoesNotMatch`` (400);
- injected faults (``Faults``) are served next: ``Throttling.User`` (400), ``InternalError`` (500),
  ``ServiceUnavailable`` (503), as the API's error JSON (``Code``, ``Message``, ``RequestId``).

OSS requests (path style) are routed by path and query; their V4 signature is only checked to name a known
access key (it is not recomputed).

Handlers are pluggable: ``stub.register(version, action, handler)``, where ``handler(request) -> dict`` returns
the JSON body (the server adds ``RequestId``) or raises ``ApiError(code, message, status)``.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

ECS_VERSION = "2014-05-26"
VPC_VERSION = "2016-04-28"
STS_VERSION = "2015-04-01"


class ApiError(Exception):
    """An error answer: the API's code, message and HTTP status."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


@dataclass
class RpcRequest:
    action: str
    version: str
    params: dict[str, str]

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.params.get(name, default)

    def numbered(self, prefix: str) -> list[str]:
        """``Prefix.1``, ``Prefix.2``, ... in order (the RPC encoding of a list)."""
        found = []
        for n in itertools.count(1):
            value = self.params.get(f"{prefix}.{n}")
            if value is None:
                return found
            found.append(value)
        return found

    def tag_filters(self) -> list[tuple[str, str | None]]:
        """``Tag.N.Key``/``Tag.N.Value`` pairs (a key without a value matches any value)."""
        pairs = []
        for n in itertools.count(1):
            key = self.params.get(f"Tag.{n}.Key")
            if key is None:
                return pairs
            pairs.append((key, self.params.get(f"Tag.{n}.Value")))


Handler = Callable[[RpcRequest], dict]


@dataclass
class Fault:
    count: int
    code: str
    status: int
    served: int = 0


@dataclass
class Faults:
    """Answers the first ``count`` calls of an action with an error, before its handler runs."""

    plan: dict[str, Fault] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, action: str, count: int, code: str = "Throttling.User", status: int = 400) -> None:
        with self.lock:
            self.plan[action] = Fault(count, code, status)

    def take(self, action: str) -> Fault | None:
        with self.lock:
            fault = self.plan.get(action)
            if fault is None or fault.served >= fault.count:
                return None
            fault.served += 1
            return fault

    def served(self) -> dict[str, int]:
        return {action: f.served for action, f in self.plan.items() if f.served}

    def clear(self) -> None:
        with self.lock:
            self.plan.clear()


MESSAGES = {
    "Throttling.User": "Request was denied due to user flow control.",
    "InternalError": "The request processing has failed due to some unknown error.",
    "ServiceUnavailable": "The request has failed due to a temporary failure of the server.",
}


def _encode(value: str) -> str:
    return quote(value, safe="~", encoding="utf-8")


def acs3_signature(method: str, path: str, query: dict[str, str], headers: dict[str, str], signed: list[str],
                   payload_hash: str, secret: str) -> str:
    """The V3 (ACS3-HMAC-SHA256) signature of a request, computed from its parts as the service does."""
    canonical_query = "&".join(f"{_encode(k)}={_encode(v)}" for k, v in sorted(query.items()))
    canonical_headers = "".join(f"{name}:{headers.get(name, '').strip()}\n" for name in signed)
    canonical = "\n".join([method, path or "/", canonical_query, canonical_headers, ";".join(signed), payload_hash])
    to_sign = "ACS3-HMAC-SHA256\n" + hashlib.sha256(canonical.encode()).hexdigest()
    return hmac.new(secret.encode(), to_sign.encode(), hashlib.sha256).hexdigest()


class AlicloudStub:
    """The server, its handler registry, its fault plan and its call log (``calls``: (action, params))."""

    def __init__(self, credentials: dict[str, str]) -> None:
        self.credentials = dict(credentials)
        self.handlers: dict[tuple[str, str], Handler] = {}
        self.oss_handlers: dict[str, Callable[[str, str, dict[str, str]], tuple[int, str]]] = {}
        self.faults = Faults()
        self.calls: list[tuple[str, dict[str, str]]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # --- registry -------------------------------------------------------------------------------------------

    def register(self, version: str, action: str, handler: Handler) -> None:
        """Answer ``action`` of API ``version`` with ``handler`` (replacing any handler it had)."""
        self.handlers[(version, action)] = handler

    def register_oss(self, operation: str, handler: Callable[[str, str, dict[str, str]], tuple[int, str]]) -> None:
        """Answer an OSS operation (``ListBuckets``, ``GetBucketTags``): ``handler(bucket, path, query)`` returns
        (status, XML body)."""
        self.oss_handlers[operation] = handler

    # --- lifecycle ------------------------------------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> AlicloudStub:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body leave in one write: two small writes meet delayed ACKs and cost ~40 ms a call.
            wbufsize = 1 << 16

            def do_GET(self) -> None:
                stub._serve(self)

            do_POST = do_GET  # noqa: N815
            do_PUT = do_GET  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # Polled every 50 ms rather than the default 0.5 s: shutdown() waits up to one interval.
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def count(self, action: str | None = None) -> int:
        with self._lock:
            return sum(1 for a, _ in self.calls if action is None or a == action)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        with self._lock:
            for action, _ in self.calls:
                out[action] = out.get(action, 0) + 1
        return out

    # --- serving --------------------------------------------------------------------------------------------

    def _reply(self, http: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str) -> None:
        http.send_response(status)
        http.send_header("Content-Type", content_type)
        http.send_header("Content-Length", str(len(body)))
        http.end_headers()
        http.wfile.write(body)

    def _json(self, http: BaseHTTPRequestHandler, status: int, payload: dict) -> None:
        payload = {**payload, "RequestId": str(uuid.uuid4()).upper()}
        self._reply(http, status, json.dumps(payload).encode(), "application/json;charset=utf-8")

    def _serve(self, http: BaseHTTPRequestHandler) -> None:
        length = int(http.headers.get("Content-Length") or 0)
        body = http.rfile.read(length) if length else b""
        url = urlsplit(http.path)
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        headers = {k.lower(): v for k, v in http.headers.items()}
        action = headers.get("x-acs-action")
        if action is None:
            self._serve_oss(http, url.path, query, headers)
            return
        try:
            self._check_signature(http.command, url.path, query, headers, body)
        except ApiError as err:
            self._json(http, err.status, {"Code": err.code, "Message": err.message})
            return
        params = dict(query)
        if body and headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            params.update(parse_qsl(body.decode(), keep_blank_values=True))
        with self._lock:
            self.calls.append((action, params))
        fault = self.faults.take(action)
        if fault is not None:
            self._json(http, fault.status, {"Code": fault.code, "Message": MESSAGES.get(fault.code, "injected")})
            return
        handler = self.handlers.get((headers.get("x-acs-version", ""), action))
        if handler is None:
            self._json(http, 404, {"Code": "InvalidAction.NotFound", "Message": f"{action} is not supported"})
            return
        try:
            answer = handler(RpcRequest(action, headers.get("x-acs-version", ""), params))
        except ApiError as err:
            self._json(http, err.status, {"Code": err.code, "Message": err.message})
            return
        self._json(http, 200, answer)

    def _check_signature(self, method: str, path: str, query: dict[str, str], headers: dict[str, str],
                         body: bytes) -> None:
        auth = headers.get("authorization", "")
        algorithm, _, rest = auth.partition(" ")
        if algorithm != "ACS3-HMAC-SHA256":
            raise ApiError("IncompleteSignature", "The request signature does not conform to Aliyun standards.")
        parts = dict(item.split("=", 1) for item in rest.split(",") if "=" in item)
        secret = self.credentials.get(parts.get("Credential", ""))
        if secret is None:
            raise ApiError("InvalidAccessKeyId.NotFound", "Specified access key is not found.", 404)
        payload_hash = hashlib.sha256(body).hexdigest()
        if headers.get("x-acs-content-sha256") != payload_hash:
            raise ApiError("SignatureDoesNotMatch", "The payload hash does not match the body.")
        signed = parts.get("SignedHeaders", "").split(";")
        expected = acs3_signature(method, path, query, headers, signed, payload_hash, secret)
        if not hmac.compare_digest(expected, parts.get("Signature", "")):
            raise ApiError("SignatureDoesNotMatch", "Specified signature is not matched with our calculation.")

    def _serve_oss(self, http: BaseHTTPRequestHandler, path: str, query: dict[str, str],
                   headers: dict[str, str]) -> None:
        auth = headers.get("authorization", "")
        key = auth.partition("Credential=")[2].split("/", 1)[0]
        if key not in self.credentials:
            body = "<Error><Code>InvalidAccessKeyId</Code><Message>unknown access key</Message></Error>"
            self._reply(http, 403, body.encode(), "application/xml")
            return
        bucket, _, rest = path.lstrip("/").partition("/")
        operation = "GetBucketTags" if bucket and "tagging" in query else "ListBuckets" if not bucket else ""
        handler = self.oss_handlers.get(operation)
        with self._lock:
            self.calls.append((operation or "OSS", dict(query)))
        if handler is None:
            body = "<Error><Code>NotImplemented</Code><Message>not served by the stub</Message></Error>"
            self._reply(http, 501, body.encode(), "application/xml")
            return
        status, xml = handler(bucket, rest, query)
        self._reply(http, status, xml.encode(), "application/xml")
