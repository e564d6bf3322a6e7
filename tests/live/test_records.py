"""The instance's records read strictly by ``status`` and ``logs``: a verdict is a real true/false, ``failed`` a
list of texts, the depth bounded; anything else is shown as unreadable with what is wrong, never as PASSED/ok,
never a traceback."""

from __future__ import annotations

import json

import pytest

from gpulease.cli.main import main
from gpulease.ephemeral import records
from tests.live.test_logs import STACK as LOGS_STACK
from tests.live.test_status import BUCKET, STACK

DEEP = b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}"


def _put_raw(running, name: str, body: bytes) -> None:
    running["s3"].put_object(Bucket=BUCKET, Key=f"{running['control']}{name}.json", Body=body)


def _verify(running, **changes) -> None:
    key = f"{running['control']}verify.json"
    doc = json.loads(running["s3"].get_object(Bucket=BUCKET, Key=key)["Body"].read())
    _put_raw(running, "verify", json.dumps({**doc, **changes}).encode())


@pytest.mark.parametrize(("changes", "shown"), [
    ({"passed": "false"}, "verify unreadable: verify.json: 'passed' is the text 'false', not true or false"),
    ({"passed": None}, "verify unreadable: verify.json: 'passed' is null, not true or false"),
    ({"passed": False, "failed": "gpu"}, "verify unreadable: verify.json: 'failed' is the text 'gpu', not a list of "
                                         "check names"),
    ({"passed": False, "failed": [1, 2]}, "verify unreadable: verify.json: 'failed' is a list, not a list of check "
                                          "names"),
    ({"passed": False, "failed": None}, "verify unreadable: verify.json: 'failed' is null, not a list of check names"),
])
def test_status_shows_a_verify_record_that_is_not_a_real_verdict_as_unreadable(running, capsys, monkeypatch,
                                                                               changes, shown) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    _verify(running, **changes)
    assert main(["status", STACK, "--outputs", running["outputs"]]) == 0
    out = capsys.readouterr().out
    assert f"READY; {shown}" in out and "PASSED" not in out, out


def test_status_json_carries_the_unreadable_line(running, capsys) -> None:
    _verify(running, passed="false")
    _put_raw(running, "heartbeat", DEEP)
    assert main(["status", STACK, "--outputs", running["outputs"], "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["verify"] == {"unreadable": "verify.json: 'passed' is the text 'false', not true or false"}
    assert doc["heartbeat"] == {"unreadable": "heartbeat.json is not JSON"} and doc["checkpoint"] is None


def test_status_shows_an_unreadable_heartbeat_and_ready_record_without_a_traceback(running, capsys,
                                                                                   monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    _put_raw(running, "heartbeat", json.dumps({"time": "2026-12-01T08:00:00Z",
                                               "gpus": [{"utilizationPercent": "93", "memoryUsedMib": 1}]}).encode())
    _put_raw(running, "ready", b'{"ready": true, "a":' + b"[" * 40 + b"]" * 40 + b"}")
    assert main(["status", STACK, "--outputs", running["outputs"]]) == 0
    out = capsys.readouterr().out
    assert "unreadable: heartbeat.json: 'gpus[0].utilizationPercent' is the text '93', not a number" in out
    assert "ready unreadable: ready.json nests deeper than 32 levels" in out, out


@pytest.mark.parametrize(("body", "line"), [
    (json.dumps({"instanceId": "i-0abc", "passed": "false", "failed": "gpu"}).encode(),
     "[verify] unreadable: verify.json: 'passed' is the text 'false', not true or false"),
    (json.dumps({"instanceId": "i-0abc", "passed": False, "failed": [1, 2]}).encode(),
     "[verify] unreadable: verify.json: 'failed' is a list, not a list of check names"),
    (b"not json", "[verify] unreadable: verify.json is not JSON"),
    (DEEP, "[verify] unreadable: verify.json is not JSON"),
    (b"[1]", "[verify] unreadable: verify.json is not a JSON object"),
])
def test_logs_show_what_is_wrong_with_an_unreadable_record(bucket, capsys, body, line) -> None:
    bucket["put"]("verify.json", body)
    assert main(["logs", LOGS_STACK, "--outputs", bucket["outputs"]]) == 0
    out = capsys.readouterr().out.splitlines()
    assert line in out and not [x for x in out if x.startswith("[verify]") and x != line], out


def test_a_record_without_an_instance_names_none_rather_than_a_question_mark(bucket, capsys) -> None:
    bucket["put"]("verify.json", {"passed": True, "failed": []})
    assert main(["logs", LOGS_STACK, "--outputs", bucket["outputs"]]) == 0
    assert "[verify] ok" in capsys.readouterr().out.splitlines()


def test_the_record_reader_is_the_one_table_of_what_the_instance_writes() -> None:
    assert records.parse("ready", b'{"ready": true, "failed": []}') == {"ready": True, "failed": []}
    with pytest.raises(records.RecordError, match=r"^ready\.json: no 'ready' \(true or false\)$"):
        records.parse("ready", b"{}")
    assert records.read("manifest", b'{"x": 1}') == {"x": 1}


def test_ctrl_c_ends_logs_follow_with_130(bucket, monkeypatch) -> None:
    from gpulease.live import logs

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(logs, "follow", interrupted)
    assert main(["logs", LOGS_STACK, "--outputs", bucket["outputs"], "--follow"]) == 130
