"""Staging's download hot path reads into buffers it keeps: each connection's receive buffer (``read_into``) and one
buffer per read-back range, never a new bytes object per receive; the body's length and the kept-alive connection
are counted as ``HTTPResponse.read1`` counts them."""

from __future__ import annotations

import http.client
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from instance import staging
from instance.staging_fetch import read_into
from tests.support.staging import CdnServer, HubRepo, HubServer

BODY = bytes(range(256)) * 40  # 10,240 bytes


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for at in range(0, len(BODY), 4000):
                part = BODY[at:at + 4000]
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY + (b"EXTRA" * 100 if self.path == "/extra" else b""))  # more than it said


@pytest.fixture
def server() -> Iterator[tuple[str, int]]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield "127.0.0.1", httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


def _drain(resp: http.client.HTTPResponse, room: int) -> tuple[bytes, list[int]]:
    buffer = memoryview(bytearray(room))
    got, sizes = bytearray(), []
    while n := read_into(resp, buffer):
        got += buffer[:n]
        sizes.append(n)
    return bytes(got), sizes


def test_a_body_is_read_into_the_callers_buffer_and_the_connection_is_kept(server: tuple[str, int]) -> None:
    conn = http.client.HTTPConnection(*server, timeout=10)
    try:
        conn.request("GET", "/one")
        resp = conn.getresponse()
        sock = conn.sock
        got, sizes = _drain(resp, 3000)
        assert got == BODY
        assert max(sizes) <= 3000 and sum(sizes) == len(BODY)
        assert resp.length == 0 and resp.isclosed() and not resp.will_close  # the body's end, counted
        conn.request("GET", "/two")  # the same kept-alive connection answers the next request
        again = conn.getresponse()
        assert conn.sock is sock
        assert _drain(again, 1 << 20)[0] == BODY  # a buffer larger than the body takes the body only
    finally:
        conn.close()


def test_bytes_past_the_bodys_length_are_never_taken(server: tuple[str, int]) -> None:
    conn = http.client.HTTPConnection(*server, timeout=10)
    try:
        conn.request("GET", "/extra")
        resp = conn.getresponse()
        got, _ = _drain(resp, 1 << 20)
        assert got == BODY
        assert resp.length == 0 and resp.isclosed()
    finally:
        conn.close()


def test_a_chunked_body_is_read_the_same_way(server: tuple[str, int]) -> None:
    conn = http.client.HTTPConnection(*server, timeout=10)
    try:
        conn.request("GET", "/chunked")
        resp = conn.getresponse()
        assert resp.chunked
        assert _drain(resp, 5000)[0] == BODY
        assert resp.isclosed()
    finally:
        conn.close()


def test_parallel_ranges_are_received_and_read_back_without_a_buffer_per_read(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # read1 and pread return a new bytes object each call: the hot path uses neither for a body with a length.
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a new buffer for one read")

    big = os.urandom(3 * 1024 * 1024 + 12345)
    cdn = CdnServer()
    hub = HubServer(cdn)
    try:
        hub.add("meta/big", HubRepo({"model.safetensors": big, "config.json": b"{}\n"}, lfs={"model.safetensors"}))
        plain_read1 = http.client.HTTPResponse.read1

        def read1_for_listings_only(resp: http.client.HTTPResponse, *args: Any) -> bytes:
            # a hub's JSON listing is read receive by receive (``Client.read_body``, cut at the deadline): that is
            # not the file bodies' hot path, which must never take a new buffer per read
            if sys._getframe(1).f_code.co_name == "read_body":
                return plain_read1(resp, *args)
            return refused()

        monkeypatch.setattr(http.client.HTTPResponse, "read1", read1_for_listings_only)
        monkeypatch.setattr(os, "pread", refused)
        settings = {"cloud": "aws", "region": "us-east-1", "mount_point": str(tmp_path),
                    "data_sources": [{"uri": "hf://meta/big", "to": str(tmp_path / "m")}],
                    "hub_endpoints": {"hf": hub.url}, "staging_retry_seconds": 0.01,
                    "staging_read_timeout_seconds": 10, "staging_split_above_bytes": 1024 * 1024,
                    "staging_piece_bytes": 512 * 1024, "staging_connections": 4}
        check = staging.Stager(settings, lambda line: None).run()
    finally:
        hub.close()
        cdn.close()
    assert check["ok"] is True, check
    assert (tmp_path / "m" / "model.safetensors").read_bytes() == big
    assert len(cdn.ranges("meta/big/model.safetensors")) == 7  # in ranges: most of them hashed by reading back
