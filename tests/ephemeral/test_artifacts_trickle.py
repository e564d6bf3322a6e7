"""``--collect-minutes`` holds inside a download already running: a loopback S3 server that trickles an artifact's
body a byte at a time is cut off when the collect step's time is up (not after botocore's read timeout times its
retries), the artifact named as not collected and the bucket kept, nothing half-written left in place."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import boto3
import pytest

from gpulease.ephemeral.artifact_bounds import ArtifactBounds
from gpulease.ephemeral.channel import BucketChannel
from gpulease.transfer.s3 import client_config
from tests.support.trickle import send_slowly

JOB = "ci/_gpulease/jobs/j1/artifacts/"
OUTPUTS = {"checkpointUri": "s3://bkt/ci/"}
SIZE = 1_000_000
GIVE_UP_SECONDS = 6  # the server's own bound: a regression fails the test instead of hanging it


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    done = threading.Event()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if "list-type=2" in self.path:
            body = (f'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bkt</Name><Prefix>{JOB}</Prefix>'
                    f"<IsTruncated>false</IsTruncated><Contents><Key>{JOB}model.bin</Key><Size>{SIZE}</Size>"
                    "</Contents></ListBucketResult>").encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(SIZE))
        self.send_header("ETag", '"e"')
        self.end_headers()
        if not send_slowly(self.wfile, b"x" * SIZE, time.monotonic() + GIVE_UP_SECONDS, self.server.done.is_set):
            self.close_connection = True

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(SIZE))
        self.send_header("ETag", '"e"')
        self.end_headers()


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server(("127.0.0.1", 0), _Handler)
    srv.done = threading.Event()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.done.set()
    srv.shutdown()
    srv.server_close()


def test_a_trickling_artifact_is_cut_off_at_the_collect_deadline(server: _Server, tmp_path: Path) -> None:
    client = boto3.session.Session(aws_access_key_id="k", aws_secret_access_key="s", region_name="us-east-1").client(
        "s3", endpoint_url=f"http://127.0.0.1:{server.server_address[1]}", config=client_config())
    bounds = ArtifactBounds(seconds=0.6)
    start = time.monotonic()
    got = BucketChannel(client).download_artifacts(OUTPUTS, "j1", tmp_path / "art", bounds)
    took = time.monotonic() - start
    assert 0.5 <= took < 3, took  # the server would trickle for 6 s, botocore's retries for minutes
    assert list(got) == []
    assert got.failed == ["'model.bin' (not collected: CollectCutError: past the collect deadline (--collect-minutes "
                          "0.01) while downloading it; the part received is not kept)"]
    assert [p.name for p in (tmp_path / "art").iterdir()] == []
    assert len(client.list_objects_v2(Bucket="bkt", Prefix=JOB)["Contents"]) == 1  # the client sends again
