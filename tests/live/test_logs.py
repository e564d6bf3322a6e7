"""``gpulease logs``: the bootstrap's and the verification's checks, the log files and the job chunks from a moto
bucket, per node; ``--follow`` prints only what is new and stops at its bound; ``--journal`` is the systemd journal
over the stack's access mode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.image_bake import control_folder, node_control_folder
from components.userdata import run_settings, settings
from gpulease.cli.main import main
from gpulease.live import clients as live_clients
from gpulease.live import logs

STACK = "aws-lora-7b"  # job session "train"
BUCKET = "gpulease-lora-ckpt"
IID = "i-0abc"
LOGS = "logs/aws-lora-7b/llama7b-lora/"  # the instance's layout (instance/log_upload.py), literally


@pytest.fixture
def bucket(aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    s3 = aws.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    control = "llama7b-lora/_gpulease/"  # the uploaded logs and the job channel, beside the checkpoints
    reports = control_folder("llama7b-lora/")  # ready.json, verify.json: where the instance writes them

    def put(key: str, body: Any) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        s3.put_object(Bucket=BUCKET, Key=f"{reports if key in ('ready.json', 'verify.json') else control}{key}", Body=data)

    put("ready.json", {"instanceId": IID, "ready": False, "failed": ["data"], "time": "2026-12-01T08:00:00Z",
                       "checks": {"gpu": {"ok": True, "detail": "1 x A10G"},
                                  "data": {"ok": False, "detail": "hf://org/m: 401 Unauthorized"}}})
    put("jobs/ci-1/log/00000000.txt", b"step 1 loss 2.31\nstep 2 loss 1.97\n")
    put(LOGS + "bootstrap.log", b"staging hf://org/m -> /data/models/m\n")
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"instanceId": IID, "publicIp": "198.51.100.7",
                                   "checkpointUri": f"s3://{BUCKET}/llama7b-lora/"}))
    monkeypatch.setattr(live_clients, "CLIENTS", lambda cloud, region: live_clients.Clients(bucket=s3))
    return {"s3": s3, "put": put, "outputs": str(outputs)}


def test_logs_show_the_checks_the_uploaded_files_and_say_what_is_not_there(bucket, capsys):
    assert main(["logs", STACK, "--outputs", bucket["outputs"]]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "[bootstrap] FAILED at 2026-12-01T08:00:00Z on i-0abc: data failed",
        "[bootstrap]   ok gpu: 1 x A10G",
        "[bootstrap]   FAIL data: hf://org/m: 401 Unauthorized",
        "[verify] no verify.json yet",
        "[bootstrap.log] staging hf://org/m -> /data/models/m",
        "[verify-run.log] not in the bucket yet (the instance copies it every few minutes once it is written; it is "
        "/data/logs/verify-run.log there: --journal or gpulease ssh)",
        "[verify-resume.log] not in the bucket yet (the instance copies it every few minutes once it is written; it "
        "is /data/logs/verify-resume.log there: --journal or gpulease ssh)",
        "[train.log] not in the bucket yet (the instance copies it every few minutes once it is written; it is "
        "/data/logs/train.log there: --journal or gpulease ssh)",
        "[job ci-1] step 1 loss 2.31",
        "[job ci-1] step 2 loss 1.97",
    ]


def test_logs_json_and_a_node_s_own_area(bucket, capsys):
    bucket["s3"].put_object(Bucket=BUCKET, Key=f"{node_control_folder('llama7b-lora/', 1)}ready.json",
                            Body=json.dumps({"instanceId": "i-0n1", "ready": True, "failed": []}).encode())
    outputs = json.loads(Path(bucket["outputs"]).read_text())
    outputs["nodes"] = [{"rank": 0, "instanceId": IID, "privateIp": "10.0.0.10"},
                        {"rank": 1, "instanceId": "i-0n1", "privateIp": "10.0.0.11"}]
    Path(bucket["outputs"]).write_text(json.dumps(outputs))
    assert main(["logs", STACK, "--node", "1", "--outputs", bucket["outputs"], "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and doc["data"]["prefix"] == f"{BUCKET}/llama7b-lora/nodes/1/_gpulease/"
    assert doc["data"]["lines"][0] == "[bootstrap] ok on i-0n1"  # no time in the record: none shown, not "?"
    assert not any(line.startswith("[job ") for line in doc["data"]["lines"])  # node 0's job is not node 1's


def test_follow_prints_only_what_is_new_and_stops_at_its_bound(bucket):
    reader = logs.LogReader(bucket["s3"], BUCKET, "llama7b-lora/_gpulease/", STACK, "llama7b-lora", session="train")
    seen: list[str] = []
    ticks = iter([0.0, 1.0, 2.0, 3.0, 10_000.0])

    naps: list[float] = []

    def nap(seconds: float) -> None:
        naps.append(seconds)
        assert len(naps) < 10, "follow did not stop at its bound"
        if len(seen) < 20:  # between two polls the instance writes more
            bucket["put"](LOGS + "bootstrap.log", b"staging hf://org/m -> /data/models/m\nready\n")
            bucket["put"]("jobs/ci-1/log/00000001.txt", b"step 3 loss 1.80\n")

    assert logs.follow(reader, seen.append, 1.0, sleep=nap, clock=lambda: next(ticks)) is True
    new = seen[10:]
    assert new == ["[bootstrap.log] ready", "[job ci-1] step 3 loss 1.80"]  # once each, nothing repeated
    assert naps == [logs.FOLLOW_POLL_SECONDS] * 3


def test_journal_runs_journalctl_over_the_access_mode(bucket, capsys):
    assert main(["logs", STACK, "--journal", "--print", "--outputs", bucket["outputs"]]) == 0
    line = capsys.readouterr().out.strip()
    assert line.endswith("ubuntu@198.51.100.7 'sudo journalctl --no-pager -n 200 -u gpulease-bootstrap.service "
                         "-u gpulease-run.service -u gpulease-watchdog.service -u gpulease-job-agent.service'")


def test_the_units_are_the_instance_s():
    assert set(logs.UNITS) == {settings.SETUP_UNIT, settings.WATCHDOG_UNIT, settings.JOB_AGENT_UNIT,
                               run_settings.RUN_UNIT}


def test_logs_of_a_stack_without_a_bucket_says_where_to_look(tmp_path, capsys):
    outputs = tmp_path / "o.json"
    outputs.write_text(json.dumps({"instanceId": IID, "checkpointUri": "none"}))
    assert main(["logs", STACK, "--outputs", str(outputs)]) == 2
    assert capsys.readouterr().err == (f"gpulease: stack '{STACK}': no checkpoint bucket, where the instance leaves "
                                       f"its logs; accepted: `gpulease logs {STACK} --journal` (over SSH/SSM)\n")
