"""``gpulease logs`` against a bucket that misbehaves: a trickling answer hits the command's overall bound, an error
answer, a redirect or a body cut short is a failed read (exit 1, ``read-failed``), never a user mistake; a log the
instance rewrote or whose window moved is followed without garbling; the newest job chunks are the ones read."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
from botocore.config import Config

from components.image_bake import control_folder
from gpulease.cli.main import main
from gpulease.live import clients as live_clients
from gpulease.live import logs
from tests.live.test_logs import BUCKET, LOGS, STACK

CONTROL = "llama7b-lora/_gpulease/"
REPORTS = control_folder("llama7b-lora/")  # ready.json, verify.json: where the instance writes them


class Misbehaving:
    """A loopback "bucket" answering every GET one way: ``trickle`` (200, a long Content-Length, a byte every
    0.2 s), ``503`` (SlowDown), ``301`` (a redirect elsewhere) or ``cut`` (a body closed short)."""

    def __init__(self, mode: str) -> None:
        stop = self.stop = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if mode == "503":
                    body = b"<Error><Code>SlowDown</Code><Message>slow down</Message></Error>"
                    self.send_response(503)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                elif mode == "301":
                    self.send_response(301)
                    self.send_header("Location", "http://127.0.0.1:1/elsewhere")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif mode == "cut":
                    self.send_response(200)
                    self.send_header("Content-Length", "1000000")
                    self.end_headers()
                    self.wfile.write(b"partial line\n" * 10)
                    self.wfile.flush()
                    self.close_connection = True
                else:
                    self.send_response(200)
                    self.send_header("Content-Length", "100000")
                    self.end_headers()
                    while not stop.wait(0.2):
                        self.wfile.write(b"x")
                        self.wfile.flush()
                    self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def misbehaving(tmp_path, monkeypatch) -> Iterator[Any]:
    servers: list[Misbehaving] = []
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"instanceId": "i-0", "checkpointUri": f"s3://{BUCKET}/llama7b-lora/"}))

    def start(mode: str) -> str:
        server = Misbehaving(mode)
        servers.append(server)
        client = boto3.client("s3", endpoint_url=server.url, region_name="us-east-1", aws_access_key_id="x",
                              aws_secret_access_key="y", config=Config(**live_clients.TIMEOUTS))
        monkeypatch.setattr(live_clients, "CLIENTS", lambda cloud, region: live_clients.Clients(bucket=client))
        return str(outputs)

    yield start
    for server in servers:
        server.close()


def test_a_trickling_bucket_hits_the_overall_bound_one_line_exit_1(misbehaving, monkeypatch, capsys):
    monkeypatch.setattr(logs, "READ_SECONDS", 1.0)
    outputs = misbehaving("trickle")
    began = time.monotonic()
    assert main(["logs", STACK, "--outputs", outputs]) == 1
    assert time.monotonic() - began < 5
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"gpulease: reading the logs of {STACK!r}: the bucket did not answer in full within 1 s "
                            "(a slow or stalled connection); nothing more was read\n")
    assert main(["logs", STACK, "--outputs", outputs, "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and doc["errors"][0]["code"] == "read-failed"


@pytest.mark.parametrize(("mode", "detail"), [("503", "SlowDown"), ("301", "301"), ("cut", "the answer was cut short (130 of 1000000 bytes)")])
def test_a_failed_bucket_call_is_read_failed_exit_1_not_bad_input(misbehaving, mode, detail, capsys):
    outputs = misbehaving(mode)
    assert main(["logs", STACK, "--outputs", outputs, "--json"]) == 1
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["ok"] is False and [e["code"] for e in doc["errors"]] == ["read-failed"]
    message = doc["errors"][0]["message"]
    assert message.startswith(f"cannot read s3://{BUCKET}/{REPORTS}ready.json: ") and detail in message
    assert captured.err == f"gpulease: {message}\n"


# --- following a log the instance rewrites whole every few minutes ----------------------------------------------


@pytest.fixture
def follower(bucket):
    key = CONTROL + LOGS + "bootstrap.log"

    def put(body: bytes) -> None:
        bucket["s3"].put_object(Bucket=BUCKET, Key=key, Body=body)

    reader = logs.LogReader(bucket["s3"], BUCKET, CONTROL, STACK, "llama7b-lora", whole_lines=True)
    return put, lambda first=False: [line for line in reader.files(first=first) if line.startswith("[bootstrap.log]")]


def test_follow_says_when_a_log_was_rewritten_and_shows_its_tail_again(follower):
    put, read = follower
    put(b"".join(b"old %d\n" % i for i in range(5)))
    assert read(True) == [f"[bootstrap.log] old {i}" for i in range(5)]
    put(b"new 1\n")  # the bootstrap ran again: a shorter log
    note = "[bootstrap.log] ... rewritten since the last read (the log started again or was rotated); its last "
    assert read() == [note + "1 lines follow", "[bootstrap.log] new 1"]
    put(b"new 1\nnew 2\n")
    assert read() == ["[bootstrap.log] new 2"]
    put(b"A" * 10 + b"\n")
    read()
    put(b"B" * 10 + b"\n")  # as long as before, other bytes
    assert read() == [note + "1 lines follow", "[bootstrap.log] " + "B" * 10]
    put(b"B" * 10 + b"\n")  # uploaded again unchanged: nothing new
    assert read() == []


def test_follow_never_prints_a_line_in_pieces(follower):
    put, read = follower
    put(b"step 1\nstep 2 lo")
    assert read(True) == ["[bootstrap.log] step 1"]
    put(b"step 1\nstep 2 loss 1.9\nstep")
    assert read() == ["[bootstrap.log] step 2 loss 1.9"]
    put(b"step 1\nstep 2 loss 1.9\nstep 3\n")
    assert read() == ["[bootstrap.log] step 3"]


def test_follow_continues_where_it_was_when_the_uploaded_window_moves(follower, monkeypatch):
    monkeypatch.setattr(logs, "MAX_LOG_BYTES", 100)
    monkeypatch.setattr(logs, "ANCHOR_BYTES", 20)
    put, read = follower
    lines = [b"line %04d\n" % i for i in range(30)]  # 10 bytes each; the instance uploads the last 100
    put(b"".join(lines[:10]))
    assert read(True) == [f"[bootstrap.log] line {i:04d}" for i in range(10)]
    put(b"".join(lines[4:14]))  # the window moved on by 4 lines
    assert read() == [f"[bootstrap.log] line {i:04d}" for i in range(10, 14)]
    put(b"".join(lines[20:30]))  # moved past what was read: a gap, said as a rewrite
    shown = read()
    assert shown == ["[bootstrap.log] ... rewritten since the last read (the log started again or was rotated); "
                     "its last 10 lines follow", *(f"[bootstrap.log] line {i:04d}" for i in range(20, 30))]


# --- job chunks ---------------------------------------------------------------------------------------------------


def test_the_newest_job_chunks_are_read_and_the_rest_is_named(bucket, monkeypatch):
    monkeypatch.setattr(logs, "MAX_JOB_CHUNKS", 20)
    s3 = bucket["s3"]
    s3.delete_object(Bucket=BUCKET, Key=f"{CONTROL}jobs/ci-1/log/00000000.txt")
    for i in range(15):
        s3.put_object(Bucket=BUCKET, Key=f"{CONTROL}jobs/a-old/log/{i:08d}.txt", Body=f"old job chunk {i}\n".encode())
    for i in range(10):
        s3.put_object(Bucket=BUCKET, Key=f"{CONTROL}jobs/b-new/log/{i:08d}.txt", Body=f"new job chunk {i}\n".encode())
    reader = logs.LogReader(s3, BUCKET, CONTROL, STACK, "llama7b-lora")
    out = reader.jobs()
    assert out[0] == ("[jobs] ... 5 older job log chunks (80 bytes) not read (at most 20 chunks, "
                      f"{logs.MAX_JOB_BYTES} bytes per read; the newest are shown)")
    assert out[1:] == [*(f"[job a-old] old job chunk {i}" for i in range(5, 15)),
                       *(f"[job b-new] new job chunk {i}" for i in range(10))]
    assert reader.jobs() == []  # read once, named once


def test_a_bucket_that_cannot_be_reached_is_read_failed_exit_1(tmp_path, monkeypatch, capsys):
    import socket

    with socket.socket() as closed:  # a loopback port nobody listens on once this socket is closed
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    client = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                          aws_access_key_id="x", aws_secret_access_key="y", config=Config(**live_clients.TIMEOUTS))
    monkeypatch.setattr(live_clients, "CLIENTS", lambda cloud, region: live_clients.Clients(bucket=client))
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"instanceId": "i-0", "checkpointUri": f"s3://{BUCKET}/llama7b-lora/"}))
    assert main(["logs", STACK, "--outputs", str(outputs)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"gpulease: cannot read s3://{BUCKET}/{REPORTS}ready.json: Could not connect to the "
                          "endpoint URL") and err.count("\n") == 1
