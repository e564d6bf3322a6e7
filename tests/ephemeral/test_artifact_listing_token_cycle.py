"""The artifact listing of ``ephemeral run`` pages with botocore's paginator, which only catches the same token twice
in a row: a bucket answering empty, truncated pages whose continuation tokens cycle A -> B -> A lists forever,
past ``--collect-minutes`` (no deadline, no page cap, no loop check in ``BucketChannel._sized``)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest

from gpulease.ephemeral.artifact_bounds import ArtifactBounds
from gpulease.ephemeral.channel import BucketChannel, ChannelError

PAGE = ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        "<Name>b</Name><Prefix>p</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated>"
        "<NextContinuationToken>{token}</NextContinuationToken></ListBucketResult>")


def _looping_store(fresh_tokens: bool = False) -> tuple[str, list[int]]:
    pages = [0]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            pages[0] += 1
            token = f"T{pages[0]}" if fresh_tokens else "B" if "continuation-token=A" in self.path else "A"
            body = PAGE.format(token=token).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{httpd.server_address[1]}", pages


def _collect(url: str, tmp_path: Path, seconds: float) -> list:
    client = boto3.client("s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id="x",
                          aws_secret_access_key="x")
    channel = BucketChannel(client, poll_seconds=0)
    outputs = {"checkpointUri": "s3://bkt-art/checkpoints/"}
    got: list = []

    def collect() -> None:
        try:
            got.append(channel.download_artifacts(outputs, "job1", tmp_path / "out", ArtifactBounds(seconds=seconds)))
        except BaseException as exc:
            got.append(exc)

    t = threading.Thread(target=collect, daemon=True)
    t.start()
    t.join(15)
    assert not t.is_alive(), f"still listing 15 s past a {seconds:g} s collect deadline"
    return got


def test_an_artifact_listing_whose_tokens_cycle_ends(tmp_path: Path) -> None:
    url, pages = _looping_store()
    [collected] = _collect(url, tmp_path, 30)
    assert pages[0] == 3, pages  # "", A, B: the next page A was already read
    assert any("the pagination loops" in f for f in collected.failed), collected.failed


def test_an_artifact_listing_that_never_ends_stops_at_the_collect_deadline(tmp_path: Path) -> None:
    url, _ = _looping_store(fresh_tokens=True)
    [collected] = _collect(url, tmp_path, 1)
    assert any("past the collect deadline" in f for f in collected.failed), collected.failed


def test_the_log_listing_whose_tokens_cycle_is_refused(tmp_path: Path) -> None:
    url, pages = _looping_store()
    client = boto3.client("s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id="x",
                          aws_secret_access_key="x")
    later = datetime.now(UTC) + timedelta(hours=1)
    with pytest.raises(ChannelError, match="the pagination loops"):
        BucketChannel(client, poll_seconds=0)._keys("bkt-art", "checkpoints/_gpulease/jobs/job1/log/", later)
    assert pages[0] == 3
