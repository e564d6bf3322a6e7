"""The bucket job channel against moto's real S3 server; a thread plays the instance side of the contract."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from moto.server import ThreadedMotoServer

from components.image_bake import control_folder
from gpulease.ephemeral.channel import BucketChannel, ChannelError, parse_bucket_uri
from tests.support.channel import BoundedChannel

BUCKET = "gpulease-ci-bucket"
PREFIX = "ckpt/"
CONTROL = f"{PREFIX}_gpulease/"
RECORDS = control_folder(PREFIX)  # where the instance reports ready.json and verify.json
OUTPUTS = {"instanceId": "i-0aaa", "checkpointUri": f"s3://{BUCKET}/{PREFIX}"}


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3(endpoint: str, monkeypatch: pytest.MonkeyPatch):
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
                       "AWS_EC2_METADATA_DISABLED": "true"}.items():
        monkeypatch.setenv(key, value)
    client = boto3.client("s3", region_name="us-east-1", endpoint_url=endpoint)
    client.create_bucket(Bucket=BUCKET)
    for item in client.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        client.delete_object(Bucket=BUCKET, Key=item["Key"])
    return client


def channel(s3) -> BucketChannel:
    return BoundedChannel(s3, poll_seconds=0.05)


def put_json(s3, key: str, body: dict) -> None:
    s3.put_object(Bucket=BUCKET, Key=key, Body=json.dumps(body).encode())


def play_instance(s3, job: str, exit_code: int, stop: threading.Event) -> None:
    """The instance side: wait for the request, stream the log in chunks, upload artifacts, then the result."""
    base = f"{CONTROL}jobs/{job}/"
    while not stop.is_set():
        try:
            request = json.loads(s3.get_object(Bucket=BUCKET, Key=f"{base}request.json")["Body"].read())
            break
        except s3.exceptions.NoSuchKey:
            time.sleep(0.02)
    else:
        return
    assert request["command"] == "python train.py --steps 2"
    for seq, text in enumerate([f"running {request['command']}\n", "step 1 loss 2.3\n", "step 2 loss 1.9\ndone\n"], 1):
        s3.put_object(Bucket=BUCKET, Key=f"{base}log/{seq:08d}.txt", Body=text.encode())
        time.sleep(0.06)
    s3.put_object(Bucket=BUCKET, Key=f"{base}artifacts/metrics.json", Body=b'{"loss": 1.9}')
    s3.put_object(Bucket=BUCKET, Key=f"{base}artifacts/model/adapter.bin", Body=b"\x00\x01")
    s3.put_object(Bucket=BUCKET, Key=f"{base}artifacts/../../escape.txt", Body=b"no")
    put_json(s3, f"{base}result.json", {"exitCode": exit_code, "finishedAt": "2026-12-01T09:00:00Z"})


def test_ready_marker_must_name_this_instance(s3) -> None:
    put_json(s3, f"{RECORDS}ready.json", {"instanceId": "i-0old", "readyAt": "2026-11-30T00:00:00Z"})
    lines: list[str] = []
    with pytest.raises(ChannelError, match="did not report ready"):
        channel(s3).wait_ready(OUTPUTS, timeout_s=0.2, on_line=lines.append)
    assert lines == ["ignoring a ready marker from another instance ('i-0old')"]

    report = {"instanceId": "i-0aaa", "ready": True, "failed": [], "time": "2026-12-01T08:05:00Z"}
    timer = threading.Timer(0.1, put_json, (s3, f"{RECORDS}ready.json", report))
    timer.start()
    marker = channel(s3).wait_ready(OUTPUTS, timeout_s=5, on_line=lines.append)
    timer.join()
    assert marker["instanceId"] == "i-0aaa" and lines[-1] == "instance i-0aaa ready at 2026-12-01T08:05:00Z"


def test_an_instance_that_reports_not_ready_fails_at_once(s3) -> None:
    put_json(s3, f"{RECORDS}ready.json", {"instanceId": "i-0aaa", "ready": False, "failed": ["disk", "gpu"]})
    started = time.monotonic()
    with pytest.raises(ChannelError, match="reported NOT ready: disk, gpu failed"):
        channel(s3).wait_ready(OUTPUTS, timeout_s=60, on_line=lambda line: None)
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(("marker", "why"), [
    ({"ready": "false"}, "'ready' is the text 'false', not true or false"),
    ({"ready": None}, "'ready' is null, not true or false"),
    ({}, "no 'ready' (true or false)"),
    ({"ready": 1}, "'ready' is the number 1, not true or false"),
    ({"ready": False, "failed": [1, 2]}, "'failed' is a list, not a list of check names"),
    ({"ready": False, "failed": "disk"}, "'failed' is the text 'disk', not a list of check names"),
])
def test_a_ready_marker_that_is_not_a_real_verdict_is_unreadable_never_ready(s3, marker: dict, why: str) -> None:
    put_json(s3, f"{RECORDS}ready.json", {"instanceId": "i-0aaa", **marker})
    with pytest.raises(ChannelError) as caught:
        channel(s3).wait_ready(OUTPUTS, timeout_s=60, on_line=lambda line: None)
    assert str(caught.value) == f"unreadable record at {RECORDS}ready.json: ready.json: {why}"


def test_a_deeply_nested_ready_marker_is_unreadable_not_a_crash(s3) -> None:
    s3.put_object(Bucket=BUCKET, Key=f"{RECORDS}ready.json", Body=b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    with pytest.raises(ChannelError, match=r"ready\.json is not JSON$"):
        channel(s3).wait_ready(OUTPUTS, timeout_s=60, on_line=lambda line: None)
    s3.put_object(Bucket=BUCKET, Key=f"{RECORDS}ready.json", Body=b'{"ready": true, "a":' + b"[" * 40 + b"]" * 40 + b"}")
    with pytest.raises(ChannelError, match=r"ready\.json nests deeper than 32 levels$"):
        channel(s3).wait_ready(OUTPUTS, timeout_s=60, on_line=lambda line: None)


def test_a_verify_result_with_a_text_verdict_is_unreadable(s3) -> None:
    put_json(s3, f"{RECORDS}verify.json", {"instanceId": "i-0aaa", "passed": "true", "failed": []})
    with pytest.raises(ChannelError, match=r"'passed' is the text 'true', not true or false$"):
        channel(s3).wait_verify(OUTPUTS, timeout_s=60, on_line=lambda line: None)


@pytest.mark.parametrize("exit_code", [0, 3])
def test_run_streams_the_log_in_order_and_returns_the_exit_code(s3, tmp_path: Path, exit_code: int) -> None:
    stop = threading.Event()
    instance = threading.Thread(target=play_instance, args=(s3, "ci-1-abc", exit_code, stop))
    instance.start()
    lines: list[str] = []
    deadline = datetime.now(UTC) + timedelta(minutes=5)
    try:
        code = channel(s3).run(OUTPUTS, "ci-1-abc", "python train.py --steps 2", deadline, lines.append)
    finally:
        stop.set()
        instance.join()
    assert code == exit_code
    assert lines == ["running python train.py --steps 2", "step 1 loss 2.3", "step 2 loss 1.9", "done"]
    request = json.loads(s3.get_object(Bucket=BUCKET, Key=f"{CONTROL}jobs/ci-1-abc/request.json")["Body"].read())
    assert request["jobId"] == "ci-1-abc" and request["deadline"].endswith("Z")

    written = channel(s3).download_artifacts(OUTPUTS, "ci-1-abc", tmp_path / "out")
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in written) == ["metrics.json", "model/adapter.bin"]
    assert (tmp_path / "out" / "model" / "adapter.bin").read_bytes() == b"\x00\x01"
    assert not (tmp_path / "escape.txt").exists(), "a key with .. never writes outside the artifacts directory"


def test_a_job_id_is_used_once(s3) -> None:
    put_json(s3, f"{CONTROL}jobs/ci-3-abc/request.json", {"command": "old"})
    with pytest.raises(ChannelError, match="already has a request"):
        channel(s3).run(OUTPUTS, "ci-3-abc", "new", datetime.now(UTC) + timedelta(minutes=1), lambda line: None)


def test_run_gives_up_at_the_deadline(s3) -> None:
    past = datetime.now(UTC) - timedelta(seconds=1)
    with pytest.raises(ChannelError, match="did not finish before the stack's deadline"):
        channel(s3).run(OUTPUTS, "ci-2-abc", "sleep 1000", past, lambda line: None)


def test_bucket_uris() -> None:
    loc = parse_bucket_uri("oss://b-1/checkpoints")
    assert (loc.scheme, loc.bucket, loc.prefix, loc.control) == ("oss", "b-1", "checkpoints/", "checkpoints/_gpulease/")
    with pytest.raises(ChannelError):
        parse_bucket_uri("none")


def test_the_verification_result_must_name_this_instance_and_a_failure_stops_the_wait(s3) -> None:
    put_json(s3, f"{RECORDS}verify.json", {"instanceId": "i-0old", "passed": True})
    with pytest.raises(ChannelError, match="no verification result within"):
        channel(s3).wait_verify(OUTPUTS, timeout_s=0.2, on_line=lambda line: None)
    failed = {"instanceId": "i-0aaa", "passed": False, "failed": ["resume"], "checks": {
        "run": {"ok": True, "detail": "stopped on purpose at its first checkpoint"},
        "resume": {"ok": False, "detail": "resumeCommand started over (resumed at step 0)"},
        "memory": {"ok": None, "detail": "no minFreeGpuMemoryPercent asked"}}}
    put_json(s3, f"{RECORDS}verify.json", failed)
    lines: list[str] = []
    started = time.monotonic()
    with pytest.raises(ChannelError, match=r"the verification failed on instance i-0aaa: resume \(see s3://"):
        channel(s3).wait_verify(OUTPUTS, timeout_s=60, on_line=lines.append)
    assert time.monotonic() - started < 5
    assert lines == ["verify run: ok: stopped on purpose at its first checkpoint",
                     "verify resume: FAILED: resumeCommand started over (resumed at step 0)",
                     "verify memory: skipped: no minFreeGpuMemoryPercent asked"]
    put_json(s3, f"{RECORDS}verify.json", {**failed, "passed": True, "failed": []})
    assert channel(s3).wait_verify(OUTPUTS, timeout_s=5, on_line=lambda line: None)["passed"] is True
