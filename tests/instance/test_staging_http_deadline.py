"""The overall deadline cuts a hub listing, and the drain of an answer, that trickles a byte at a time: every body
staging reads is read one receive at a time with the deadline checked between receives."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from instance.staging_http import Client, Deadline, DeadlineError

BODY = b'[{"type": "file", "path": "a.txt", "size": 3}]' + b" " * 150  # 200 bytes: 10 s at 50 ms a byte


class Trickle(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        try:
            for i in range(len(BODY)):
                self.wfile.write(BODY[i:i + 1])
                self.wfile.flush()
                time.sleep(0.05)
        except OSError:
            pass


@pytest.fixture
def trickling() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api/models/org/repo/tree/main"
    finally:
        server.shutdown()
        server.server_close()


def test_a_trickling_listing_is_cut_at_the_sources_deadline(trickling: str) -> None:
    client = Client(timeout=2.0, deadline=Deadline(0.6, "the source's deadline"))
    started = time.monotonic()
    with pytest.raises(DeadlineError, match=r"past the source's deadline \(0.6 s\) while reading http://127\.0\.0\.1"):
        client.get_json(trickling)
    assert time.monotonic() - started < 2.0


def test_draining_a_trickling_answer_stops_at_the_deadline(trickling: str) -> None:
    client = Client(timeout=2.0, deadline=Deadline(0.6, "the source's deadline"))
    resp, _ = client.open(trickling, {})
    started = time.monotonic()
    client.release(resp, drain=True)
    assert time.monotonic() - started < 1.5
    assert not client._pool()  # a connection whose answer was not read to the end is not kept
