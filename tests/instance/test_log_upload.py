"""The log files' upload (instance/log_upload.py): the watchdog copies the bootstrap, verify and session logs to
``<checkpoint_uri>_gpulease/logs/<stack>/<experiment>/``, redacted, complete lines, at most the end of a long file,
where ``gpulease logs`` reads them (moto's S3 on 127.0.0.1, the storage CLI a stand-in that puts with boto3)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpulease.live import logs
from instance import cloud_access as ca
from instance import log_upload as lu
from tests.support.instance import DEADLINE_EPOCH, make_rig, run_in_process

TOKEN = "hf_" + "a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwX"  # shaped like a Hugging Face token


def s3_copier(path: Path, url: str) -> Path:
    """``aws s3 cp SRC s3://bucket/key`` as a stand-in: the same arguments, a boto3 put to moto."""
    path.write_text(f"""#!{sys.executable}
import sys, boto3
src, dst = sys.argv[3], sys.argv[4]
bucket, key = dst[len("s3://"):].split("/", 1)
s3 = boto3.client("s3", region_name="us-east-1", endpoint_url={url!r}, aws_access_key_id="testing",
                  aws_secret_access_key="testing")
with open(src, "rb") as fh:
    s3.put_object(Bucket=bucket, Key=key, Body=fh.read())
""")
    path.chmod(0o755)
    return path


def shell_copier(path: Path, record: Path, code: int = 0) -> Path:
    path.write_text(f'#!/bin/sh\necho "$4" >> {record}\ncp "$3" "{record}.last"\nexit {code}\n')
    path.chmod(0o755)
    return path


def drain(uploader: lu.LogUploader, limit: float = 60.0) -> None:
    """Let the copy that runs (and the queue behind it) finish, in real time."""
    end = time.monotonic() + limit
    while (uploader.job is not None or uploader.preparing is not None or uploader.queue) and time.monotonic() < end:
        time.sleep(0.02)
        uploader.tick()
    assert uploader.job is None and uploader.preparing is None and not uploader.queue, "the copies did not finish"


class RealClock:
    monotonic = staticmethod(time.monotonic)


def uploader(tmp_path: Path, copier: Path, **overrides: Any) -> tuple[lu.LogUploader, list[str]]:
    decided: list[str] = []
    (tmp_path / "data" / "logs").mkdir(parents=True, exist_ok=True)
    s = {"cloud": "aws", "region": "us-east-1", "stack": "st", "experiment": "exp1",
         "checkpoint_uri": "s3://bucket/ckpt/", "mount_point": str(tmp_path / "data"),
         "state_dir": str(tmp_path / "state"), "job": {"session": "train"},
         "control_upload_command": [str(copier), "s3", "cp", "{src}", "{dst}"], **overrides}
    metadata = ca.Metadata("aws", "http://127.0.0.1:9", 1.0)
    dog = SimpleNamespace(s=s, clock=RealClock(), metadata=metadata, credentials=None,
                          decide=lambda event, reason: decided.append(f"{event}: {reason}"))
    return lu.LogUploader(dog), decided


def test_the_watchdog_uploads_the_logs_redacted_where_gpulease_logs_reads_them(tmp_path: Path, aws) -> None:
    s3 = aws.client("s3")
    s3.create_bucket(Bucket="bucket")
    copier = s3_copier(tmp_path / "aws-cp", aws.url)
    rig = make_rig(tmp_path, stack="st", job={"session": "train", "command": "python train.py"},
                   control_upload_command=[str(copier), "s3", "cp", "{src}", "{dst}", "--region", "{region}"],
                   log_upload_timeout_seconds=10**8)  # the virtual clock runs ahead of the real copy
    data_logs = tmp_path / "data" / "logs"
    (data_logs / "bootstrap.log").write_text(f"staging hf://org/m with --token {TOKEN}\nready\n")
    (data_logs / "train.log").write_text("step 1 loss 2.31\nstep 2 lo")  # the last line is not complete yet
    dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 7 * 3600, max_ticks=3)
    drain(dog.logs)
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="bucket")["Contents"])
    assert [k for k in keys if "/logs/" in k] == ["ckpt/_gpulease/logs/st/exp1/bootstrap.log",
                                                  "ckpt/_gpulease/logs/st/exp1/train.log"]
    reader = logs.LogReader(s3, "bucket", "ckpt/_gpulease/", "st", "exp1", session="train")
    assert reader.files(first=True) == [
        "[bootstrap.log] staging hf://org/m with --token <redacted>",
        "[bootstrap.log] ready",
        "[verify-run.log] not in the bucket yet (the instance copies it every few minutes once it is written; it is "
        "/data/logs/verify-run.log there: --journal or gpulease ssh)",
        "[verify-resume.log] not in the bucket yet (the instance copies it every few minutes once it is written; it "
        "is /data/logs/verify-resume.log there: --journal or gpulease ssh)",
        "[train.log] step 1 loss 2.31",
    ]
    # The next round copies what changed (the line is complete now); ``follow`` prints only what is new.
    (data_logs / "train.log").write_text("step 1 loss 2.31\nstep 2 loss 1.97\n")
    dog.logs.last = float("-inf")
    dog.logs.tick()
    drain(dog.logs)
    assert reader.files(first=False) == ["[train.log] step 2 loss 1.97"]
    assert TOKEN not in str(s3.get_object(Bucket="bucket", Key="ckpt/_gpulease/logs/st/exp1/bootstrap.log")["Body"].read())


def test_a_long_file_is_uploaded_as_its_end_after_a_line_saying_what_was_left_out(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    lines = [f"line {i:06d}\n" for i in range(2000)]  # 12 bytes each
    path.write_text("".join(lines) + "partial")
    data, skipped = lu.read_tail(str(path), limit=1000)
    assert data.decode() == "".join(lines[-82:])  # whole lines of the last 1000 bytes; the partial one is held back
    assert skipped == 12 * (2000 - 82)
    out = lu.redacted(data, skipped, "/data/logs/big.log").decode().splitlines()
    assert out[0] == f"[gpulease] the first {skipped} bytes are not uploaded; the whole file is /data/logs/big.log on the instance"
    assert out[1:] == [line.strip() for line in lines[-82:]]
    assert len(lu.redacted(*lu.read_tail(str(path)), str(path))) <= lu.MAX_UPLOAD_BYTES + 200


def test_links_fifos_devices_and_directories_are_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("root:x:0:0\n")
    (tmp_path / "link.log").symlink_to(secret)
    os.mkfifo(tmp_path / "fifo.log")
    (tmp_path / "dir.log").mkdir()
    started = time.monotonic()
    for name in ("link.log", "fifo.log", "dir.log", "missing.log"):
        assert lu.read_tail(str(tmp_path / name)) is None, name
    assert lu.read_tail("/dev/null") is None  # a device: only a regular file is read
    assert time.monotonic() - started < 2  # a FIFO with no writer never blocks the loop


def test_a_linked_log_is_never_uploaded(tmp_path: Path) -> None:
    record = tmp_path / "copies.txt"
    up, _ = uploader(tmp_path, shell_copier(tmp_path / "cp", record))
    (tmp_path / "etc-shadow").write_text("root:secret\n")
    (tmp_path / "data" / "logs" / "bootstrap.log").symlink_to(tmp_path / "etc-shadow")
    up.tick()
    drain(up)
    assert not record.exists()


def test_a_failed_copy_is_logged_and_tried_again_an_unchanged_file_is_not(tmp_path: Path) -> None:
    record = tmp_path / "copies.txt"
    copier = shell_copier(tmp_path / "cp", record, code=1)
    up, decided = uploader(tmp_path, copier)
    (tmp_path / "data" / "logs" / "bootstrap.log").write_text("ready\n")
    up.tick()
    drain(up)
    assert decided == ["log-upload: bootstrap.log: the copy exited 1: "]
    shell_copier(copier, record, code=0)
    up.last = float("-inf")
    up.tick()
    drain(up)
    up.last = float("-inf")
    up.tick()  # nothing changed since the copy that worked: no copy
    drain(up)
    assert record.read_text().splitlines() == ["s3://bucket/ckpt/_gpulease/logs/st/exp1/bootstrap.log"] * 2
    assert Path(f"{record}.last").read_text() == "ready\n"


def test_a_copy_that_hangs_is_killed_at_its_bound_and_the_loop_never_waits(tmp_path: Path) -> None:
    copier = tmp_path / "cp"
    copier.write_text("#!/bin/sh\nsleep 60\n")
    copier.chmod(0o755)
    up, decided = uploader(tmp_path, copier, log_upload_timeout_seconds=0.5)
    (tmp_path / "data" / "logs" / "bootstrap.log").write_text("ready\n")
    started = time.monotonic()
    up.tick()
    assert time.monotonic() - started < 1 and up.preparing is not None  # redacted beside the loop
    while up.job is None and time.monotonic() - started < 10:
        time.sleep(0.01)
        up.tick()
    assert time.monotonic() - started < 5 and up.job is not None  # then copied beside the loop
    drain(up, limit=10)
    assert decided == ["log-upload: bootstrap.log: the copy took longer than 0.5 s: killed"]
    assert "bootstrap.log" not in up.sent


@pytest.mark.parametrize("missing", ["checkpoint_uri", "control_upload_command"])
def test_without_a_bucket_nothing_is_copied(tmp_path: Path, missing: str) -> None:
    record = tmp_path / "copies.txt"
    up, _ = uploader(tmp_path, shell_copier(tmp_path / "cp", record), **{missing: None})
    (tmp_path / "data" / "logs" / "bootstrap.log").write_text("ready\n")
    up.tick()
    assert up.job is None and not record.exists()


def test_the_reader_and_the_instance_share_the_layout() -> None:
    assert logs.LOG_FILES == lu.LOG_FILES
    assert lu.log_key("st", "exp1", "train.log") == "logs/st/exp1/train.log"
    assert lu.log_names({"job": {"session": "sft"}}) == ["bootstrap.log", "verify-run.log", "verify-resume.log", "sft.log"]


SECRET = "hunter2-very-secret"


@pytest.mark.parametrize("separator", ["\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
@pytest.mark.parametrize("template", ["--password{sep}{secret}", "password:{sep}{secret}",
                                      "curl -H 'Authorization: Bearer{sep}{secret}'"])
def test_a_secret_after_a_character_splitlines_takes_for_a_line_end_is_redacted(separator: str, template: str) -> None:
    """Lines end at a line feed only (as ``gpulease logs`` reads them): a flag and its value around a CR, a form
    feed or a Unicode separator are one line, redacted whole."""
    data = (template.format(sep=separator, secret=SECRET) + "\nnext\n").encode()
    out = lu.redacted(data, 0, "/data/logs/train.log")
    assert SECRET.encode() not in out
    assert out.count(b"<redacted>") == 1 and out.endswith(b"\nnext\n") and out.count(b"\n") == 2


def test_the_bucket_copy_keeps_the_bytes_of_the_file_but_the_redactions() -> None:
    """A progress bar's CRs stay CRs (not line feeds); bytes that are not UTF-8 pass unchanged."""
    data = b"Downloading: 50%\rDownloading: 100%\r\n\xff\xfe raw \xc3\xa9\n--password\rp4ss\x0cmore\n"
    assert lu.redacted(data, 0, "/x") == b"Downloading: 50%\rDownloading: 100%\r\n\xff\xfe raw \xc3\xa9\n" \
                                         b"--password\r<redacted>\x0cmore\n"


@pytest.mark.parametrize(("text", "expected"), [
    ("db password is: s3cr3tP@ss", "db password is: <redacted>"),
    ("the password is s3cr3tP@ss", "the password is <redacted>"),
    ("https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20250101%2Fus-east-1"
     "%2Fs3%2Faws4_request&X-Amz-Date=20250101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host"
     "&X-Amz-Signature=abcdef0123456789abcdef0123456789",
     "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=<redacted>"
     "&X-Amz-Date=20250101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature=<redacted>"),
    ("https://b.oss-cn-hangzhou.aliyuncs.com/k?OSSAccessKeyId=STS.abcdefgh&Expires=1700000000&Signature=ab%2Bcd%3D",
     "https://b.oss-cn-hangzhou.aliyuncs.com/k?OSSAccessKeyId=<redacted>&Expires=1700000000&Signature=<redacted>"),
    ("GET https://a.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig=AbCdEf%2B012 200",
     "GET https://a.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig=<redacted> 200"),
    ("fetch https://h/x?token=opaque123&page=2 done", "fetch https://h/x?token=<redacted>&page=2 done"),
    ("x-amz-signature: deadbeefcafe", "x-amz-signature: <redacted>"),
])
def test_redact_removes_a_value_after_is_and_the_credentials_of_a_presigned_url(text: str, expected: str) -> None:
    assert lu.manifest.redact(text) == expected


def test_a_long_line_is_redacted_in_linear_time() -> None:
    """A progress bar writes thousands of CR-separated updates into one line: redacting it whole stays fast."""
    started = time.monotonic()
    out = lu.redacted(b"a" * 200_000 + b"\n" + b"--password\r" + b"x" * 200_000 + b"\n", 0, "/x")
    assert out == b"a" * 200_000 + b"\n--password\r<redacted>\n"
    assert time.monotonic() - started < 5


HOSTILE = 4 * 1024 * 1024


@pytest.mark.parametrize(("text", "expected"), [
    ("a@" * (HOSTILE // 2), None),  # no URL, no credential form: passed on as it is
    ("Bearer " * (HOSTILE // 7), "<redacted> (a text of 4194302 characters holding 599186 credential-like forms)"),
    ("token=" * (HOSTILE // 6), "<redacted> (a text of 4194300 characters holding 699050 credential-like forms)"),
    ("a@\n" * (HOSTILE // 3), None),
    ("token=x\n" * (HOSTILE // 8), "<redacted> (a text of 65543 characters holding 8193 credential-like forms)\n" * 63
     + "<redacted> (a text of 65031 characters holding 8129 credential-like forms)\n"),
], ids=["a@ run", "Bearer run", "token= run", "a@ lines", "token= lines"])
def test_four_mib_of_hostile_input_is_redacted_in_linear_time(text: str, expected: str | None) -> None:
    started = time.monotonic()
    out = lu.redacted(text.encode(), 0, "/data/logs/train.log").decode()
    took = time.monotonic() - started
    assert took < 3, f"{took:.1f} s"  # about 0.3 s on an idle machine; the bound is for a loaded one
    assert out == (text if expected is None else expected)


def test_a_secret_in_a_long_line_among_few_forms_is_redacted_exactly() -> None:
    line = "x " * 200_000 + "curl -H 'Authorization: Bearer sk_live_abcdef123456' https://u:pa@ss@h/db"
    out = lu.redacted((line + "\nstep 2 token=abc123\n").encode(), 0, "/x").decode()
    assert out == ("x " * 200_000 + "curl -H 'Authorization: Bearer <redacted>' https://<redacted>@h/db\n"
                   "step 2 token=<redacted>\n")


def test_the_redaction_runs_beside_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    release = threading.Event()
    monkeypatch.setattr(lu, "redacted", lambda data, skipped, path: release.wait(10) and data)
    record = tmp_path / "copies.txt"
    up, _ = uploader(tmp_path, shell_copier(tmp_path / "cp", record))
    (tmp_path / "data" / "logs" / "bootstrap.log").write_text("ready\n")
    started = time.monotonic()
    for _ in range(5):
        up.tick()  # a redaction that takes long never holds up a tick
    assert time.monotonic() - started < 1 and up.preparing is not None and up.job is None
    release.set()
    drain(up)
    assert record.read_text().splitlines() == ["s3://bucket/ckpt/_gpulease/logs/st/exp1/bootstrap.log"]


def test_the_flush_waits_for_a_redaction_the_loop_started_and_copies_it(tmp_path: Path, monkeypatch) -> None:
    """The final copy starts while tick's redaction of the file is still being written: flush waits for it, then
    copies it, within its bound."""
    record = tmp_path / "copies.txt"
    up, decided = uploader(tmp_path, shell_copier(tmp_path / "cp", record))
    (tmp_path / "data" / "logs" / "train.log").write_text(f"step 1 token={TOKEN}\n")
    slow = lu.redacted

    def slowly(data: bytes, skipped: int, path: str) -> bytes:
        time.sleep(0.5)
        return slow(data, skipped, path)

    monkeypatch.setattr(lu, "redacted", slowly)
    up.names = ["train.log"]
    up.tick()
    assert up.preparing is not None and up.preparing[2].is_alive()  # the redaction is being written by tick
    started = time.monotonic()
    assert up.flush(30) == ["train.log"]
    assert time.monotonic() - started < 5 and up.preparing is None and decided == []
    assert record.read_text().splitlines() == ["s3://bucket/ckpt/_gpulease/logs/st/exp1/train.log"]
    assert Path(f"{record}.last").read_text() == "step 1 token=<redacted>\n"


def test_a_redaction_that_hangs_never_holds_the_flush_past_its_bound(tmp_path: Path, monkeypatch) -> None:
    record = tmp_path / "copies.txt"
    up, decided = uploader(tmp_path, shell_copier(tmp_path / "cp", record), log_upload_timeout_seconds=60)
    (tmp_path / "data" / "logs" / "train.log").write_text("step 1\n")
    monkeypatch.setattr(lu, "redacted", lambda data, skipped, path: time.sleep(30) or data)
    up.names = ["train.log"]
    up.tick()
    assert up.preparing is not None
    started = time.monotonic()
    assert up.flush(1.0) == []
    took = time.monotonic() - started
    assert took < 1.5, took  # the flush's bound, not the hung thread's 30 s nor the copy's 60 s
    assert not record.exists() and up.preparing is None
    assert decided == ["log-upload: train.log: redacting was still running at the final copy's bound: not copied"]
