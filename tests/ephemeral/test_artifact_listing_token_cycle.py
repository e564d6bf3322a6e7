"""The artifact listing of ``ephemeral run`` pages with botocore's paginator, which only catches the same token twice
in a row: a bucket answering empty, truncated pages whose continuation tokens cycle A -> B -> A lists forever,
past ``--collect-minutes`` (no deadline, no page cap, no loop check in ``BucketChannel._sized``)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3

from gpulease.ephemeral.artifact_bounds import ArtifactBounds
from gpulease.ephemeral.channel import BucketChannel

PAGE = ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        "<Name>b</Name><Prefix>p</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated>"
        "<NextContinuationToken>{token}</NextContinuationToken></ListBucketResult>")


def _looping_store() -> tuple[str, list[int]]:
    pages = [0]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            pages[0] += 1
            token = "B" if "continuation-token=A" in self.path else "A"
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


def test_an_artifact_listing_whose_tokens_cycle_ends(tmp_path: Path) -> None:
    url, pages = _looping_store()
    client = boto3.client("s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id="x",
                          aws_secret_access_key="x")
    channel = BucketChannel(client, poll_seconds=0)
    outputs = {"checkpointUri": "s3://bkt-art/checkpoints/"}
    errors: list[BaseException] = []

    def collect() -> None:
        try:
            channel.download_artifacts(outputs, "job1", tmp_path / "out", ArtifactBounds(seconds=2))
        except BaseException as exc:  # a refusal is fine; only a hang fails
            errors.append(exc)

    t = threading.Thread(target=collect, daemon=True)
    t.start()
    t.join(15)
    assert not t.is_alive(), f"still listing after {pages[0]} pages, 15 s past a 2 s collect deadline"
