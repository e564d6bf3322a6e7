"""The job agent's parts in-process: reading both CLIs' listings, the ossutil command with the instance's RAM
role, how the log is cut into chunks, and exit codes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from components.userdata import JOB_COMMANDS
from instance import job_agent
from tests.support.instance import ALI_CREDENTIALS, MetadataServer, MetadataState, events, recorder

AWS_LISTING = """                           PRE ci-1-abc/
                           PRE ci-2 with space/
2026-11-29 19:00:00        123 request.json
2026-11-29 19:00:01          0 result file.json
"""
OSSUTIL_LISTING = """oss://gpulease-ckpt/ckpt/_gpulease/jobs/ci-1-abc/
oss://gpulease-ckpt/ckpt/_gpulease/jobs/request.json
oss://gpulease-ckpt/ckpt/_gpulease/jobs/
Object and Directory Number is: 3

0.105421(s) elapsed
"""


def test_listings_of_both_clis_give_the_names_one_level_down() -> None:
    uri = "s3://b/ckpt/_gpulease/jobs/"
    assert job_agent.parse_listing(AWS_LISTING, uri) == ["ci-1-abc/", "ci-2 with space/", "request.json", "result file.json"]
    oss = "oss://gpulease-ckpt/ckpt/_gpulease/jobs/"
    assert job_agent.parse_listing(OSSUTIL_LISTING, oss) == ["ci-1-abc/", "request.json"]


@pytest.mark.parametrize(("returncode", "code"), [(0, 0), (3, 3), (-9, 137), (-15, 143)])
def test_a_death_by_signal_is_reported_as_a_shell_would(returncode: int, code: int) -> None:
    assert job_agent.exit_code(returncode) == code


def _agent(tmp_path: Path, **overrides: Any) -> job_agent.Agent:
    settings = {
        "cloud": "aws",
        "region": "us-east-1",
        "checkpoint_uri": "s3://b/ckpt/",
        "mount_point": str(tmp_path / "data"),
        "state_dir": str(tmp_path / "state"),
        "job_agent": dict(JOB_COMMANDS["aws"]),
        "metadata_url": "http://127.0.0.1:9",  # nothing answers: no request ever leaves the machine
        **overrides,
    }
    return job_agent.Agent(settings)


def test_ossutil_gets_the_ram_role_sts_credentials_read_through_the_metadata_token(tmp_path: Path) -> None:
    ev = tmp_path / "events.jsonl"
    ossutil = recorder(tmp_path / "ossutil", "ossutil", ev)
    commands = {k: [str(ossutil), *v[1:]] for k, v in JOB_COMMANDS["alicloud"].items()}
    state = MetadataState(cloud="alicloud", role="gpulease-exp1-role")
    with MetadataServer(state) as server:
        agent = _agent(tmp_path, cloud="alicloud", region="cn-hangzhou", checkpoint_uri="oss://ck/p/",
                       metadata_url=server.url, job_agent=commands)
        assert agent.listing("oss://ck/p/_gpulease/jobs/") == []
        assert agent.put("result", b"{}", "oss://ck/p/_gpulease/jobs/j/result.json")
    calls = events(ev)
    endpoint = ["-e", "https://oss-cn-hangzhou-internal.aliyuncs.com"]
    v4 = ["--sign-version", "v4", "--region", "cn-hangzhou"]
    assert calls[0]["argv"] == ["ls", "-d", "oss://ck/p/_gpulease/jobs/", *endpoint, "-c", calls[0]["config"]["path"], *v4]
    assert calls[1]["argv"][:2] == ["cp", "-f"]
    assert calls[1]["argv"][3:] == ["oss://ck/p/_gpulease/jobs/j/result.json", *endpoint, "-c", calls[1]["config"]["path"], *v4]
    for call in calls:
        assert call["config"]["mode"] == "0o600"
        assert f"stsToken={ALI_CREDENTIALS['SecurityToken']}" in call["config"]["text"]
        assert ALI_CREDENTIALS["AccessKeySecret"] not in " ".join(call["argv"])
    assert state.refused == []  # the credentials were read through a token, never with a plain GET


def test_aws_cli_calls_are_told_the_metadata_endpoint_and_refused_the_tokenless_fallback(tmp_path: Path) -> None:
    ev = tmp_path / "events.jsonl"
    aws = recorder(tmp_path / "aws", "aws", ev)
    commands = {k: [str(aws), *v[1:]] for k, v in JOB_COMMANDS["aws"].items()}
    agent = _agent(tmp_path, metadata_url="http://127.0.0.1:9", job_agent=commands)
    agent.listing("s3://b/ckpt/_gpulease/jobs/")
    (call,) = events(ev)
    assert call["env"]["AWS_EC2_METADATA_V1_DISABLED"] == "true"
    assert call["env"]["AWS_EC2_METADATA_SERVICE_ENDPOINT"] == "http://127.0.0.1:9/"


def test_a_chunk_ends_at_a_line_end_and_the_rest_waits_for_its_line(tmp_path: Path, monkeypatch) -> None:
    agent = _agent(tmp_path)
    sent: list[tuple[str, bytes]] = []
    monkeypatch.setattr(agent, "put", lambda what, data, dst: sent.append((dst.rsplit("/", 1)[-1], data)) or True)
    log = Path(agent.path("j", "log"))
    log.parent.mkdir(parents=True)
    st = {"offset": 0, "seq": 1}
    log.write_bytes(b"step 1\nprogress 10%\rprogress 20%\rhalf a li")
    assert agent.ship_log("j", st, final=False)
    log.write_bytes(log.read_bytes() + "ne é\n".encode())
    assert agent.ship_log("j", st, final=False)
    assert agent.ship_log("j", st, final=False)  # nothing new: no empty chunk
    log.write_bytes(log.read_bytes() + b"no newline at exit")
    assert agent.ship_log("j", st, final=True)
    assert sent == [
        ("00000001.txt", b"step 1\nprogress 10%\rprogress 20%\r"),
        ("00000002.txt", "half a line é\n".encode()),
        ("00000003.txt", b"no newline at exit"),
    ]
    assert json.loads(Path(agent.path("j")).read_text()) == {"offset": len(log.read_bytes()), "seq": 4}


def test_a_line_that_never_ends_is_still_shipped(tmp_path: Path, monkeypatch) -> None:
    agent = _agent(tmp_path)
    sent: list[bytes] = []
    monkeypatch.setattr(agent, "put", lambda what, data, dst: sent.append(data) or True)
    log = Path(agent.path("j", "log"))
    log.parent.mkdir(parents=True)
    log.write_bytes(b"x" * (job_agent.MAX_PARTIAL + 1))
    assert agent.ship_log("j", {"offset": 0, "seq": 1}, final=False)
    assert sent == [b"x" * (job_agent.MAX_PARTIAL + 1)]


def test_a_failed_upload_keeps_the_chunk_for_the_next_try(tmp_path: Path, monkeypatch) -> None:
    agent = _agent(tmp_path)
    outcomes = iter([False, True])
    sent: list[tuple[str, bytes]] = []

    def put(what: str, data: bytes, dst: str) -> bool:
        ok = next(outcomes)
        if ok:
            sent.append((dst.rsplit("/", 1)[-1], data))
        return ok

    monkeypatch.setattr(agent, "put", put)
    log = Path(agent.path("j", "log"))
    log.parent.mkdir(parents=True)
    log.write_bytes(b"a\n")
    st = {"offset": 0, "seq": 1}
    assert not agent.ship_log("j", st, final=False)
    assert st == {"offset": 0, "seq": 1}
    log.write_bytes(b"a\nb\n")
    assert agent.ship_log("j", st, final=False)
    assert sent == [("00000001.txt", b"a\nb\n")] and st == {"offset": 4, "seq": 2}


def test_settings_without_a_job_channel_are_refused(tmp_path: Path, monkeypatch, capsys) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"checkpoint_uri": "s3://b/p/"}))
    monkeypatch.setenv("GPULEASE_SETTINGS", str(path))
    assert job_agent.main() == 2
    assert "no checkpoint_uri or job_agent" in capsys.readouterr().err


def test_a_job_state_file_that_is_not_a_job_record_is_left_alone(tmp_path: Path, capsys) -> None:
    agent = _agent(tmp_path)
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    (state / "ci-1.json").write_text("[1, 2]")
    (state / "ci-2.json").write_text('{"offset": 3}')
    try:
        agent.tick()
    except Exception as exc:  # the bucket listing may fail here; the state files must not be why
        assert "phase" not in repr(exc) and "list indices" not in repr(exc), exc
    out = capsys.readouterr().out
    assert f"job state ci-1.json: not a job record ({state}/ci-1.json: expected a JSON object, found list); left " \
        "alone" in out
    assert f"job state ci-2.json: not a job record ({state}/ci-2.json: phase None is not one of started, exited, " \
        "done); left alone" in out


@pytest.mark.parametrize(("make", "why"), [
    (lambda p: p.write_text('{"phase": "exited", "phase": "done"}'), "key 'phase' is written twice"),
    (lambda p: p.write_bytes(b'{"phase": "done", "note": "\xff"}'), "not UTF-8 (byte 27)"),
    (lambda p: p.write_text('{"phase": "done", "note": "' + "x" * 300_000 + '"}'), "bytes; at most 262144 accepted"),
    (lambda p: os.mkfifo(p), "not a regular file"),
    (lambda p: p.symlink_to("/dev/zero"), "cannot open"),
    (lambda p: p.write_text('{"phase": "exited", "offset": "3", "seq": 1, "exitCode": 0, "finishedAt": "t"}'),
     "offset is '3'; accepted: int, 0 or more"),
    (lambda p: p.write_text('{"phase": "exited", "offset": 0, "seq": true, "exitCode": 0, "finishedAt": "t"}'),
     "seq is True; accepted: int"),
    (lambda p: p.write_text('{"phase": "started", "offset": -5, "seq": 1}'), "offset is -5; accepted: int, 0 or more"),
    (lambda p: p.write_text('{"phase": "exited", "offset": 0, "seq": 1}'), "an exited record without exitCode"),
    # Under the byte cap, each escaped the strict reader (int-from-text limit, the decoder's recursion limit).
    (lambda p: p.write_text('{"phase": "done", "note": 1' + "0" * 5000 + "}"),
     "a number of 5001 characters; at most 100 accepted"),
    (lambda p: p.write_text('{"phase": "done", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"),
     "nested 100001 deep; at most 64 accepted"),
])
def test_job_state_files_are_read_through_the_strict_reader(tmp_path: Path, capsys, monkeypatch, make, why) -> None:
    """A hostile or damaged record (a FIFO would block a plain open, a string offset crashes the log shipping on
    every tick) is one line naming the file and the problem; the job is never run again, the others go on."""
    agent = _agent(tmp_path)
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    make(state / "ci-1.json")
    (state / "ci-2.json").write_text('{"phase": "exited", "offset": 0, "seq": 1, "exitCode": 0, "finishedAt": "t"}')
    finished = []
    monkeypatch.setattr(agent, "finish", lambda job, st: finished.append(job))
    monkeypatch.setattr(agent, "listing", lambda uri: [])
    agent.tick()
    out = capsys.readouterr().out
    assert f"job state ci-1.json: not a job record ({state}/ci-1.json" in out and why in out, out
    assert finished == ["ci-2"]


def test_a_request_that_is_not_one_json_object_is_reported_not_run(tmp_path: Path, monkeypatch) -> None:
    agent = _agent(tmp_path)
    admitted = []
    monkeypatch.setattr(agent, "listing", lambda uri: ["request.json"])

    def copy(what, template, src="", dst=""):
        Path(dst).write_text('{"jobId": "ci-1", "command": "true", "command": "rm -rf /data"}')
        return ""

    monkeypatch.setattr(agent, "cli", copy)
    monkeypatch.setattr(agent, "admit", lambda job, request: admitted.append(request))
    agent.consider("ci-1")
    assert admitted == [{"error": "request.json is not a JSON object (key 'command' is written twice)"}]


@pytest.mark.parametrize(("body", "why"), [
    ("[" * 100_000 + "]" * 100_000, "nested 100001 deep; at most 64 accepted"),
    ("1" * 4301, "a number of 4301 characters; at most 100 accepted"),
    ("-1." + "5" * 200, "a number of 203 characters; at most 100 accepted"),
])
def test_a_request_nested_too_deep_or_with_a_huge_number_is_reported_not_run(
        tmp_path: Path, monkeypatch, body: str, why: str) -> None:
    agent = _agent(tmp_path)
    admitted = []
    monkeypatch.setattr(agent, "listing", lambda uri: ["request.json"])

    def copy(what, template, src="", dst=""):
        Path(dst).write_text('{"jobId": "ci-1", "command": "true", "x": ' + body + "}")
        return ""

    monkeypatch.setattr(agent, "cli", copy)
    monkeypatch.setattr(agent, "admit", lambda job, request: admitted.append(request))
    agent.consider("ci-1")
    assert admitted == [{"error": f"request.json is not a JSON object ({why})"}]


def test_the_depth_and_number_bounds_leave_ordinary_settings_alone(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    nested = "[" * 63 + "]" * 63
    path.write_text('{"a": "[[[[\\"{{", "b": [1, 2.5, {"c": -1e5}], "d": ' + nested + ', "e": ' + "9" * 100 + "}")
    value = job_agent.ca.load_settings(str(path))
    assert value["a"] == '[[[["{{' and value["b"] == [1, 2.5, {"c": -100000.0}] and value["e"] == int("9" * 100)
