"""A loopback S3 stand-in for the deadline tests of the laptop side's downloads: one object of ``size`` bytes, its
HEAD answered at once, its GET and listings as the test's handler writes them (``send_slowly`` to trickle), and a
boto3 client pointed at it with the kit's own client settings."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

import boto3

from gpulease.transfer.s3 import client_config


class TrickleServer(ThreadingHTTPServer):
    """``done`` is set when the test ends: a trickle still running stops at once instead of at its own bound."""

    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.done = threading.Event()


S = TypeVar("S", bound=TrickleServer)


class S3Handler(BaseHTTPRequestHandler):
    """Keeps its connection alive as S3 does; HEAD: the object's ``size`` and an ETag."""

    protocol_version = "HTTP/1.1"
    server: TrickleServer
    size = 0

    def log_message(self, *args: object) -> None:
        pass

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(self.size))
        self.send_header("ETag", '"e"')
        self.end_headers()


@contextmanager
def serving(handler: type[S3Handler], server: type[S] = TrickleServer) -> Iterator[S]:
    """``server`` answering with ``handler`` on 127.0.0.1 for the block; at its end ``done`` is set and the server
    shut."""
    srv = server(handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield srv
    finally:
        srv.done.set()
        srv.shutdown()
        srv.server_close()


def s3_client(srv: TrickleServer, config: Any = None) -> Any:
    """A boto3 S3 client of made-up keys for ``srv``, with ``config`` (the kit's ``client_config()`` by default)."""
    return boto3.session.Session(aws_access_key_id="k", aws_secret_access_key="s", region_name="us-east-1").client(
        "s3", endpoint_url=f"http://127.0.0.1:{srv.server_address[1]}", config=config or client_config())
