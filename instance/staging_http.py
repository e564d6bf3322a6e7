#!/usr/bin/env python3
"""HTTP for staging: kept-alive connections per thread, redirects, the hub token only to the hub's own host, a
per-read timeout and an overall deadline on every read, and retries of transient answers (standard library only).

- ``Deadline``: the time a source (or the whole stage) may take; every socket read is bounded by what is left of it,
  so a server trickling a byte per read is cut off at the deadline, not only when one read stalls; while a request
  is sent and its status and header lines are read (inside ``http.client``, no check between bytes), a timer shuts
  the socket at the deadline (``bounds.ShutAtDeadline``, as for the metadata service).
- ``Client.open``: one request, following up to ``MAX_REDIRECTS`` redirects, each only to http(s) and never from
  https down to http (``redirect_target``); the ``Authorization`` header goes only
  to ``auth_host`` (the hub's scheme, host and port), never to a host a redirect points at (a CDN), nor over a
  plain-http redirect or page link on the hub's own host.
- ``retrying``: 429, 500, 502, 503, 504 and a cut or refused connection are retried with exponential backoff (or
  the server's ``Retry-After``, capped), within the attempts and the deadline; anything else fails at once.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, TypeVar

try:
    from instance.bounds import ShutAtDeadline
    from instance.staging_files import StagingError
except ImportError:  # on the instance: installed next to this file
    from bounds import ShutAtDeadline  # type: ignore[no-redef]
    from staging_files import StagingError  # type: ignore[no-redef]

MAX_REDIRECTS = 5
TRANSIENT = frozenset({429, 500, 502, 503, 504})
MAX_BACKOFF = 60.0
JSON_LIMIT = 64 * 1024 * 1024
DRAIN_LIMIT = 64 * 1024
BUFFER = 64 * 1024

T = TypeVar("T")
Log = Callable[[str], None]


class DeadlineError(StagingError):
    """A source, or the whole stage, ran past its overall deadline."""


class TransientError(StagingError):
    """An answer or a failure worth another attempt (a 503, a reset connection)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Deadline:
    """An overall time bound; ``inner`` gives the tighter of two."""

    def __init__(self, seconds: float, what: str, outer: Deadline | None = None) -> None:
        self.seconds = seconds
        self.what = what
        self.end = time.monotonic() + seconds
        if outer is not None and outer.end < self.end:
            self.end, self.seconds, self.what = outer.end, outer.seconds, outer.what

    def left(self) -> float:
        return self.end - time.monotonic()

    def check(self, doing: str) -> None:
        if self.left() <= 0:
            raise DeadlineError(f"past {self.what} ({self.seconds:g} s) while {doing}")

    def bound(self, timeout: float) -> float:
        """A read timeout that ends no later than the deadline."""
        return max(0.001, min(timeout, self.left()))


def retry_after(resp: http.client.HTTPResponse) -> float | None:
    """The server's ``Retry-After`` in seconds (the delta form), capped at ``MAX_BACKOFF``; None when absent."""
    value = (resp.getheader("Retry-After") or "").strip()
    return min(float(value), MAX_BACKOFF) if ascii_digits(value) else None


def ascii_digits(text: str, most: int = 20) -> bool:
    """Whether ``text`` is 1 to ``most`` ASCII digits: ``str.isdigit`` also accepts ``²`` or ``٣``, which ``int``
    and ``float`` refuse or read as another number."""
    return 0 < len(text) <= most and text.isascii() and text.isdigit()


def next_wait(exc: TransientError, attempt: int, pause: float, deadline: Deadline, what: str) -> float:
    """How long to wait before attempt ``attempt + 1``: the server's ``Retry-After`` when it gave one, else
    exponential backoff from ``pause``; ``DeadlineError`` when that wait would end past ``deadline``."""
    wait = exc.retry_after if exc.retry_after is not None else min(pause * 2 ** (attempt - 1), MAX_BACKOFF)
    if wait >= deadline.left():
        raise DeadlineError(f"{what}: {exc}; no time left for another attempt before {deadline.what} "
                            f"({deadline.seconds:g} s)") from exc
    return wait


def content_range(value: str, unsatisfied: bool = False) -> tuple[int, int | None]:
    """(first byte, complete length or None when ``*``: unknown, RFC 9110 §14.4) of ``bytes a-b/total``; with
    ``unsatisfied``, of a 416's ``bytes */total`` (first byte 0). (-1, None) when unreadable."""
    try:
        unit, _, spec = value.strip().partition(" ")
        first, _, total = spec.partition("/")
        start = 0 if unsatisfied and first == "*" else int(first.split("-")[0])
        if unit != "bytes" or start < 0 or not (ascii_digits(total.strip()) or total.strip() == "*" != first):
            return -1, None
        return start, int(total) if ascii_digits(total.strip()) else None
    except ValueError:
        return -1, None


def if_range_validator(resp: http.client.HTTPResponse) -> str | None:
    """What a later ``If-Range`` may carry for this answer's bytes (RFC 9110 §13.1.5): its ETag when strong (a weak
    ``W/`` tag never); with no ETag at all, its Last-Modified when strong by §8.8.2.2 (the answer's Date at least
    one second after it). None: nothing proves a later range is of the same file, so it is never resumed."""
    etag = (resp.getheader("ETag") or "").strip()
    if etag:
        return etag if len(etag) > 1 and etag[0] == etag[-1] == '"' else None
    try:
        modified = email.utils.parsedate_to_datetime(resp.getheader("Last-Modified") or "")
        date = email.utils.parsedate_to_datetime(resp.getheader("Date") or "")
        strong = (date - modified).total_seconds() >= 1
    except (TypeError, ValueError, OverflowError):
        return None
    return resp.getheader("Last-Modified", "").strip() if strong else None


def encoded_as(resp: http.client.HTTPResponse) -> str | None:
    """The content coding of an answer's body other than ``identity`` (``gzip``, ``br``, ``gzip, br``), or None for
    the file's own bytes. Staging asks ``Accept-Encoding: identity``; a server or proxy that encodes anyway sends
    another representation (RFC 9110 §8.4: the coding is applied to the data; §12.5.3), whose bytes and length are
    not the file's."""
    value = ", ".join(v.strip() for v in resp.headers.get_all("Content-Encoding") or [] if v.strip())
    codings = [c.strip().lower() for c in value.split(",") if c.strip()]
    return value[:80] if any(c != "identity" for c in codings) else None


def transfer_coded_as(resp: http.client.HTTPResponse) -> str | None:
    """The answer's ``Transfer-Encoding`` when it is anything but absent or exactly ``chunked`` (``gzip, chunked``,
    ``chunked, chunked``, an empty one), or None. Only ``chunked`` is undone (``http.client``); any other coding
    leaves the coded file as the body, and the ``Content-Length`` beside it is not the file's length (RFC 9112
    §6.1, §6.3)."""
    values = resp.headers.get_all("Transfer-Encoding")
    if not values:
        return None
    value = ", ".join(v.strip() for v in values)
    codings = [c.strip().lower() for c in value.split(",")]
    return None if codings == ["chunked"] and resp.chunked else (value[:80] or "(empty)")


def redirect_target(url: str, location: str, says: str = "redirects to") -> str:
    """Where a redirect from ``url`` leads: only to http(s), never from https down to http, and only to a URL that
    parses; else ``StagingError`` naming the redirect's source and what it pointed at. ``says``: how the message
    names the link (a listing's next page is held to the same rule: ``links its next page to``)."""
    source = urllib.parse.urlsplit(url)
    shown = location.encode("ascii", "backslashreplace").decode()[:200]
    if not location.isascii() or any(c <= " " or c == "\x7f" for c in location.strip()):
        raise StagingError(f"{source.netloc}{source.path} {says} {shown!r}, which is not a URL (a space, a "
                           "control or a non-ASCII character); refused")
    try:
        target = urllib.parse.urljoin(url, location)
        parts = urllib.parse.urlsplit(target)
        parts.port  # noqa: B018 - a port that is not a number raises here, not in http.client
    except ValueError as exc:
        raise StagingError(f"{source.netloc}{source.path} {says} {shown!r}, which is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise StagingError(f"{source.netloc}{source.path} {says} {shown!r}: scheme {parts.scheme or '(none)'}, "
                           "not http or https; refused")
    if source.scheme == "https" and parts.scheme == "http":
        raise StagingError(f"{source.netloc}{source.path} {says} {shown!r}, from https down to plain http; "
                           "refused")
    return target


DEFAULT_PORTS = {"http": 80, "https": 443}


def sent_as(url: str) -> str:
    """The request ``url`` stands for, as ``Client`` sends it: the fragment never goes on the wire, the scheme and
    host are the same in any letter case (RFC 3986 §6.2.2.1) and a default port is the port left out (§6.2.3).
    Two URLs with the same ``sent_as`` ask the same thing of the same server."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme  # urlsplit gives it in lower case, as hostname the host
    try:
        port = parts.port
    except ValueError:  # not a number: never sent (redirect_target refuses it)
        return url
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    port_text = f":{port}" if port is not None and port != DEFAULT_PORTS.get(scheme) else ""
    return f"{scheme}://{host}{port_text}{parts.path or '/'}{f'?{parts.query}' if parts.query else ''}"


class Client:
    """Kept-alive connections, one set per thread; ``auth`` goes only to ``auth_host``."""

    def __init__(self, timeout: float, deadline: Deadline, auth: dict[str, str] | None = None,
                 auth_host: str | None = None) -> None:
        self.timeout = timeout
        self.deadline = deadline
        self.auth = auth
        self.auth_host = auth_host
        self._local = threading.local()

    def _pool(self) -> dict[tuple[str, str], http.client.HTTPConnection]:
        pool = getattr(self._local, "pool", None)
        if pool is None:
            pool = self._local.pool = {}
        return pool

    def close(self) -> None:
        for conn in self._pool().values():
            conn.close()
        self._pool().clear()

    def discard(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        conn = self._pool().pop((parts.scheme, parts.netloc), None)
        if conn is not None:
            conn.close()

    def bound_reads(self, conn: http.client.HTTPConnection) -> None:
        """Bound the next read on ``conn`` by the per-read timeout and the deadline."""
        sock = conn.sock
        if sock is not None:
            bound = self.deadline.bound(self.timeout)
            if bound != sock.gettimeout() and (bound < self.timeout or sock.gettimeout() != self.timeout):
                sock.settimeout(bound)  # a system call: only when the bound changes (near the deadline)

    def _send(self, url: str, headers: dict[str, str], method: str) -> tuple[http.client.HTTPConnection,
                                                                               http.client.HTTPResponse]:
        parts = urllib.parse.urlsplit(url)
        key = (parts.scheme, parts.netloc)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        for fresh in (False, True):
            conn = None if fresh else self._pool().pop(key, None)
            reused = conn is not None
            if conn is None:
                cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
                conn = cls(parts.hostname, parts.port, timeout=self.deadline.bound(self.timeout))
            shut = ShutAtDeadline(conn, self.deadline.left())  # the header lines too, however slowly they come
            try:
                with shut:
                    if conn.sock is not None:
                        self.bound_reads(conn)
                    conn.request(method, path, headers=headers)
                    self.bound_reads(conn)
                    return conn, conn.getresponse()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                if shut.expired.is_set():
                    raise DeadlineError(f"past {self.deadline.what} ({self.deadline.seconds:g} s) while asking "
                                        f"{parts.netloc}") from None
                if reused and isinstance(exc, (http.client.RemoteDisconnected, ConnectionError, BrokenPipeError)):
                    continue  # the server closed a kept-alive connection: once more on a new one
                self.deadline.check(f"asking {parts.netloc}")
                raise TransientError(f"{parts.netloc}: {type(exc).__name__}: {exc}") from exc
        raise TransientError(f"{parts.netloc}: the connection closed")  # pragma: no cover

    def open(self, url: str, headers: dict[str, str], method: str = "GET") -> tuple[http.client.HTTPResponse, str]:
        """(response, final URL) after redirects; ``release`` the response when done with it."""
        for _ in range(MAX_REDIRECTS + 1):
            self.deadline.check(f"asking {urllib.parse.urlsplit(url).netloc}")
            parts = urllib.parse.urlsplit(url)
            sent = dict(headers)
            if self.auth and f"{parts.scheme}://{parts.netloc}" == self.auth_host:  # the hub's scheme, host, port
                sent.update(self.auth)
            conn, resp = self._send(url, sent, method)
            resp.gpulease_conn = conn  # type: ignore[attr-defined]
            resp.gpulease_key = (parts.scheme, parts.netloc)  # type: ignore[attr-defined]
            location = resp.getheader("Location")
            if resp.status in (301, 302, 303, 307, 308) and location:
                self.release(resp, drain=True)
                url = redirect_target(url, location)
                continue
            return resp, url
        raise StagingError(f"more than {MAX_REDIRECTS} redirects from {urllib.parse.urlsplit(url).netloc}")

    def release(self, resp: http.client.HTTPResponse, drain: bool = False) -> None:
        """Keep the connection for the next request when its answer was read to the end, else close it."""
        conn = resp.gpulease_conn  # type: ignore[attr-defined]
        if drain and not resp.isclosed():
            try:
                self.read_body(resp, DRAIN_LIMIT, "draining an answer")
            except (OSError, http.client.HTTPException, StagingError):
                conn.close()
                return
        if resp.isclosed() and not resp.will_close:
            self._pool()[resp.gpulease_key] = conn  # type: ignore[attr-defined]
        else:
            conn.close()

    def read_body(self, resp: http.client.HTTPResponse, limit: int, doing: str) -> bytes:
        """At most ``limit`` bytes of the body, one receive per call with the deadline checked between them (a
        single ``read(n)`` waits to fill its buffer, so a server trickling a byte at a time would never be cut)."""
        conn = resp.gpulease_conn  # type: ignore[attr-defined]
        parts: list[bytes] = []
        got = 0
        while got < limit:
            self.deadline.check(doing)
            self.bound_reads(conn)
            data = resp.read1(min(BUFFER, limit - got))
            if not data:
                break
            parts.append(data)
            got += len(data)
        return b"".join(parts)

    def get_json(self, url: str) -> tuple[Any, http.client.HTTPResponse]:
        resp, _ = self.open(url, {"Accept": "application/json"})
        try:
            body = self.read_body(resp, JSON_LIMIT + 1, f"reading {url}")
        except DeadlineError:
            resp.gpulease_conn.close()  # type: ignore[attr-defined]
            raise
        except (OSError, http.client.HTTPException) as exc:
            resp.gpulease_conn.close()  # type: ignore[attr-defined]
            self.deadline.check(f"reading {url}")
            raise TransientError(f"{url}: the answer was cut ({type(exc).__name__}: {exc})") from exc
        self.release(resp)
        where = urllib.parse.urlsplit(url)
        if resp.status in TRANSIENT:
            raise TransientError(f"{where.netloc} answered {resp.status} for {where.path}", retry_after(resp))
        if resp.status != 200:
            raise StagingError(f"{where.netloc} answered {resp.status} for {where.path}: "
                               f"{body[:200].decode('utf-8', 'replace')}")
        if len(body) > JSON_LIMIT:
            raise StagingError(f"{url}: the answer is larger than {JSON_LIMIT} bytes")
        try:
            return json.loads(body), resp
        except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than the decoder goes
            raise StagingError(f"{url}: not JSON ({type(exc).__name__})") from None


def retrying(call: Callable[[], T], *, attempts: int, pause: float, deadline: Deadline, log: Log, what: str) -> T:
    """``call()``, again after a ``TransientError`` with exponential backoff, within ``attempts`` and ``deadline``."""
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except TransientError as exc:
            if attempt == attempts:
                raise StagingError(f"{what}: gave up after {attempts} attempts: {exc}") from exc
            wait = next_wait(exc, attempt, pause, deadline, what)
            log(f"staging {what}: {exc}; attempt {attempt}/{attempts}, again in {wait:g} s")
            time.sleep(wait)
    raise StagingError(f"{what}: no attempt")  # pragma: no cover
