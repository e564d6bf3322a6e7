"""gpulease status against moto (S3 holding the instance's heartbeat, readiness, verification and manifest; EC2;
AWS Budgets), the outputs through the seams (an --outputs file, a `pulumi` on PATH), and offline: one line."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from components.image_bake import control_folder
from gpulease.cli.main import EXIT_BAD_INPUT, main
from gpulease.core import vocabulary as v
from gpulease.live import clients as live_clients
from tests.support.clock import FIXED_NOW
from tests.support.inventory import IMAGE

STACK = "aws-lora-7b"  # its spec is in stacks/: project llm-finetune, budget 40 USD, job session "train"
BUCKET = "gpulease-lora-ckpt"
ACCOUNT = "123456789012"


def _stamp(minutes_ago: float) -> str:
    return v.rfc3339(FIXED_NOW - timedelta(minutes=minutes_ago))


@pytest.fixture
def running(aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A stack as the cloud would hold it: an instance in EC2, its reports in the bucket, its budget in Budgets."""
    ec2, s3, budgets = aws.client("ec2"), aws.client("s3"), aws.client("budgets")
    instance = ec2.run_instances(ImageId=IMAGE, InstanceType="g5.xlarge", MinCount=1, MaxCount=1)["Instances"][0]
    iid = instance["InstanceId"]
    s3.create_bucket(Bucket=BUCKET)
    control = control_folder("llama7b-lora/")  # where the instance writes its reports
    reports = {
        "heartbeat": {"time": _stamp(3), "instanceId": iid, "deadline": v.rfc3339(FIXED_NOW + timedelta(hours=5)),
                      "gpus": [{"utilizationPercent": 93, "memoryUsedMib": 20100, "memoryTotalMib": 23028}],
                      "gpuError": None, "lastSync": _stamp(12), "syncFailures": 0,
                      "newestCheckpoint": {"path": "step-1200.pt", "modified": _stamp(14), "ageMinutes": 11},
                      "spend": {"maxHourlyUsd": 1.006, "hours": 3.0, "usdAtMost": 3.02, "budgetUsd": 40,
                                "percent": 7.5, "warned": []}},
        "ready": {"instanceId": iid, "ready": True, "failed": [], "time": _stamp(170)},
        "verify": {"instanceId": iid, "passed": True, "failed": [], "time": _stamp(150), "stepResumed": 20,
                   "checkpointStep": 20, "seconds": {"run": 300.0, "resume": 40.0, "total": 340.0},
                   "gpu": {"peakMemoryMib": 20500, "memoryTotalMib": 23028}, "checks": {}},
        "manifest": {"instanceId": iid, "time": _stamp(149), "job": "train",
                     "code": {"commit": "9f1c2e7d4b5a69788", "dirty": False},
                     "instance": {"imageId": "ami-0abc", "imageFamily": "dlami-base-ubuntu22"},
                     "software": {"torch": "2.5.1", "cuda": "12.4", "nvidiaDriver": "550.127.05"},
                     "params": {"path": "/data/code/configs/lora-7b.yaml", "sha256": "ab" * 32},
                     "data": {"sources": [{"uri": "s3://d/x"}]}},
    }
    for name, body in reports.items():
        s3.put_object(Bucket=BUCKET, Key=f"{control}{name}.json", Body=json.dumps(body).encode())
    budgets.create_budget(AccountId=ACCOUNT, Budget={
        "BudgetName": f"gpulease-llm-finetune-{STACK}", "BudgetType": "COST", "TimeUnit": "ANNUALLY",
        "BudgetLimit": {"Amount": "40", "Unit": "USD"}})
    outputs = {"instanceId": iid, "checkpointUri": f"s3://{BUCKET}/llama7b-lora/", "publicIp": "198.51.100.7",
               "deadline": v.rfc3339(FIXED_NOW + timedelta(hours=5)), "market": "spot"}
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    monkeypatch.setattr(live_clients, "CLIENTS", lambda cloud, region: live_clients.Clients(
        bucket=s3, ec2=ec2, budgets=budgets, sts=aws.client("sts")))
    monkeypatch.setattr("gpulease.core.clock.utcnow", lambda: FIXED_NOW)
    return {"id": iid, "outputs": str(path), "s3": s3, "control": control}


def test_status_json_gathers_the_instance_reports_the_cloud_and_the_budget(running, capsys) -> None:
    assert main(["status", STACK, "--outputs", running["outputs"], "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["instance"] == {"id": running["id"], "type": "g5.xlarge", "market": "spot", "state": "running"}
    assert doc["minutesLeft"] == 300.0
    assert doc["heartbeat"]["ageMinutes"] == 3.0
    assert doc["heartbeat"]["gpus"] == [{"utilizationPercent": 93, "memoryUsedMib": 20100, "memoryTotalMib": 23028}]
    assert doc["checkpoint"]["lastSyncAgeMinutes"] == 12.0 and doc["checkpoint"]["newest"]["path"] == "step-1200.pt"
    assert doc["spend"]["budgetUsd"] == 40 and doc["spend"]["estimate"]["usdAtMost"] == 3.02
    assert doc["spend"]["awsBudget"] == {"name": f"gpulease-llm-finetune-{STACK}", "limitUsd": 40.0,
                                         "actualUsd": 0.0, "forecastUsd": 0.0}
    assert doc["ready"]["ready"] is True and doc["verify"]["passed"] is True and doc["verify"]["stepResumed"] == 20
    assert doc["manifest"]["commit"] == "9f1c2e7d4b5a69788" and doc["manifest"]["torch"] == "2.5.1"
    assert doc["manifest"]["dataSources"] == 1 and doc["notes"] == []


def test_status_fits_one_screen(running, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["status", STACK, "--outputs", running["outputs"]]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) <= 24
    for expected in (f"{running['id']} running g5.xlarge spot", "(5 h 0 min left)", "GPU0: 93%, 20100/23028 MiB",
                     "last sync 12 min ago", "READY; verify PASSED (peak 20500/23028 MiB, resumed at step 20)",
                     "commit 9f1c2e7d4b5a", "at most $3.02 (7.5% of $40.00)", "AWS Budgets: actual $0.00"):
        assert expected in out, out


def test_a_report_from_an_earlier_instance_is_set_aside_and_named(running, capsys) -> None:
    running["s3"].put_object(Bucket=BUCKET, Key=f"{running['control']}verify.json",
                             Body=json.dumps({"instanceId": "i-0earlier", "passed": False}).encode())
    assert main(["status", STACK, "--outputs", running["outputs"], "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["verify"] is None
    assert doc["notes"] == [f"verify.json is from instance i-0earlier, not {running['id']}"]


def test_offline_status_is_one_clear_line(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"instanceId": "i-0123", "checkpointUri": f"s3://{BUCKET}/llama7b-lora/"}))
    # The real clients, towards a port where nothing listens (boto3 honours AWS_ENDPOINT_URL).
    for key, value in {"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ACCESS_KEY_ID": "x",
                       "AWS_SECRET_ACCESS_KEY": "x"}.items():
        monkeypatch.setenv(key, value)
    assert main(["status", STACK, "--outputs", str(outputs)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith(f"gpulease: stack '{STACK}': cannot read s3://{BUCKET}/_gpulease/llama7b-lora/control/heartbeat.json")
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_without_outputs_the_pulumi_cli_is_asked_and_its_absence_is_said(tmp_path: Path, capsys,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["status", STACK]) == EXIT_BAD_INPUT
    assert "the Pulumi CLI is not installed" in capsys.readouterr().err
    # A stack with no stack file here is named as such first, not blamed on the missing CLI alone.
    for command in ("status", "logs"):
        assert main([command, "nosuch"]) == EXIT_BAD_INPUT
        err = capsys.readouterr().err
        assert err.startswith("gpulease: no stack 'nosuch' in ") and err.count("\n") == 1
        assert err.rstrip().endswith("and the Pulumi CLI, which would read the outputs of a stack made elsewhere, is "
                                     "not installed")
    pulumi = tmp_path / "pulumi"
    pulumi.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/asked\necho '{{}}'\n")
    pulumi.chmod(0o755)
    assert main(["ssh", STACK, "--print"]) == EXIT_BAD_INPUT
    assert f"stack '{STACK}' has no instance outputs (not deployed yet, or destroyed)" in capsys.readouterr().err
    assert (tmp_path / "asked").read_text().split()[:5] == ["stack", "output", "--json", "--stack", STACK]


def test_the_alibaba_bucket_is_read_through_the_oss_s3_endpoint() -> None:
    made = live_clients.make_clients("alicloud", "cn-hangzhou")
    assert made.bucket.meta.endpoint_url == "https://oss-cn-hangzhou.aliyuncs.com"
    assert made.ec2 is None and made.budgets is None


STOPS = [{"stoppedAt": "2026-12-01T02:00:00Z", "resumedAt": "2026-12-01T05:00:00Z", "stoppedSeconds": 10800,
          "resumedFromStep": 1200},
         {"stoppedAt": "2026-12-01T06:00:00Z", "resumedAt": "2026-12-01T06:20:00Z", "stoppedSeconds": 1200,
          "resumedFromStep": None}]


def _put(running, name: str, changes: dict[str, Any]) -> None:
    key = f"{running['control']}{name}.json"
    doc = json.loads(running["s3"].get_object(Bucket=BUCKET, Key=key)["Body"].read())
    running["s3"].put_object(Bucket=BUCKET, Key=key, Body=json.dumps({**doc, **changes}).encode())


def test_status_shows_each_interruption_when_how_long_and_the_step_it_resumed_from(running, capsys,
                                                                                 monkeypatch) -> None:
    # The manifest (written when the job started again) knows the first; the newer heartbeat knows both.
    _put(running, "manifest", {"interruptions": STOPS[:1], "spotRequest": {
        "requestId": "sir-0abc1234", "cancelled": True, "state": "cancelled", "cause": "deadline",
        "time": "2026-12-01T07:55:00Z", "detail": "spot request sir-0abc1234 is cancelled"}})
    _put(running, "heartbeat", {"interruptions": [*STOPS, "not a record"]})
    assert main(["status", STACK, "--outputs", running["outputs"], "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["interruptions"] == [{**stop, "kind": None, "previousInstance": None, "inconsistent": None}
                                    for stop in STOPS]
    assert doc["spotRequest"]["requestId"] == "sir-0abc1234" and doc["spotRequest"]["cancelled"] is True
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["status", STACK, "--outputs", running["outputs"]]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert ("interruptions 2: stopped 2026-12-01T02:00:00Z for 3 h 0 min, resumed 2026-12-01T05:00:00Z from step "
            "1200; stopped 2026-12-01T06:00:00Z for 20 min, resumed 2026-12-01T06:20:00Z (no checkpoint step "
            "reported)") in out
    assert "spot request sir-0abc1234 cancelled at 2026-12-01T07:55:00Z (deadline)" in out


NEW_INSTANCE = {"kind": "new-instance", "previousInstance": "i-0earlier000000001", "stoppedAt": "2026-12-01T02:00:00Z",
                "resumedAt": "2026-12-01T05:05:00Z", "stoppedSeconds": 11100, "resumedFromStep": 300}


def test_a_new_instance_on_the_same_disk_shows_when_how_long_and_the_step(running, capsys, monkeypatch) -> None:
    older = {**NEW_INSTANCE, "previousInstance": "i-0older0000000000", "stoppedAt": None, "stoppedSeconds": None,
             "resumedAt": "2026-12-01T01:00:00Z", "resumedFromStep": None}
    _put(running, "manifest", {"interruptions": [older, NEW_INSTANCE]})
    assert main(["status", STACK, "--outputs", running["outputs"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["interruptions"] == [{**older, "inconsistent": None},
                                                                    {**NEW_INSTANCE, "inconsistent": None}]
    monkeypatch.setenv("COLUMNS", "300")
    assert main(["status", STACK, "--outputs", running["outputs"]]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert ("interruptions 2: new instance after i-0older0000000000: when it stopped is not known, resumed "
            "2026-12-01T01:00:00Z (no checkpoint step reported); new instance after i-0earlier000000001: stopped "
            "2026-12-01T02:00:00Z for 3 h 5 min, resumed 2026-12-01T05:05:00Z from step 300") in out
    assert "stopped ? for ?" not in out


@pytest.mark.parametrize("bad", [{"stoppedSeconds": True, "resumedFromStep": "12"}, {"stoppedSeconds": 1e999}])
def test_interruption_fields_that_are_not_numbers_are_shown_as_unknown(running, capsys, bad: dict) -> None:
    _put(running, "manifest", {"interruptions": [{**STOPS[0], **bad}]})
    assert main(["status", STACK, "--outputs", running["outputs"], "--json"]) == 0
    [shown] = json.loads(capsys.readouterr().out)["interruptions"]
    assert shown["stoppedSeconds"] is None and shown["resumedFromStep"] == (None if "resumedFromStep" in bad else 1200)


def test_without_interruptions_status_shows_no_such_row(running, capsys) -> None:
    assert main(["status", STACK, "--outputs", running["outputs"]]) == 0
    assert "interruptions" not in capsys.readouterr().out


HOSTILE = "2026-12-01T00:00:00Z\x1b]0;PWNED\x07\x1b[2J\rFAKE\u202etxt"


def test_control_and_format_characters_from_the_reports_are_shown_escaped(running, capsys, monkeypatch) -> None:
    _put(running, "manifest", {"spotRequest": {"requestId": "sir-x\x1b[2J", "cancelled": True, "state": "cancelled",
                                               "cause": "dead\x1b]0;TITLE\x07line", "time": "t\u202e1"}})
    _put(running, "heartbeat", {"interruptions": [{**STOPS[0], "stoppedAt": HOSTILE, "resumedAt": "\x9b31m"}]})
    monkeypatch.setenv("COLUMNS", "300")
    assert main(["status", STACK, "--outputs", running["outputs"]]) == 0
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x1b\x07\r\x9b\u202e")
    flat = " ".join(out.split())
    assert ("stopped 2026-12-01T00:00:00Z\\e]0;PWNED\\a\\e[2J\\rFAKE\\u202etxt for 3 h 0 min, resumed \\x9b31m "
            "from step 1200") in flat
    assert "spot request sir-x\\e[2J cancelled at t\\u202e1 (dead\\e]0;TITLE\\aline)" in flat


def test_a_long_interruptions_list_is_cut_to_the_latest_fifty_and_says_so(running, capsys, monkeypatch) -> None:
    many = [{**STOPS[0], "resumedFromStep": step} for step in range(3000)]
    _put(running, "heartbeat", {"interruptions": many})
    assert main(["status", STACK, "--outputs", running["outputs"], "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [i["resumedFromStep"] for i in doc["interruptions"]] == list(range(2950, 3000))
    assert doc["interruptionsLeftOut"] == 2950
    monkeypatch.setenv("COLUMNS", "300")
    assert main(["status", STACK, "--outputs", running["outputs"]]) == 0
    assert "interruptions 3000 (latest 3 shown): " in " ".join(capsys.readouterr().out.split())


def test_a_short_interruptions_list_leaves_nothing_out(running, capsys) -> None:
    _put(running, "heartbeat", {"interruptions": STOPS})
    assert main(["status", STACK, "--outputs", running["outputs"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["interruptionsLeftOut"] == 0


@pytest.mark.parametrize(("bad", "why"), [
    ({"stoppedSeconds": 168 * 3600 + 1}, "stopped longer than 168 h, the longest runtime"),
    ({"stoppedSeconds": -5}, "a negative stopped time"),
    ({"resumedAt": "2026-12-01T01:59:59Z"}, "resumed before it stopped"),
])
def test_an_interruption_record_that_cannot_be_true_is_shown_as_inconsistent(running, capsys, monkeypatch, bad: dict,
                                                                           why: str) -> None:
    _put(running, "heartbeat", {"interruptions": [{**STOPS[0], **bad}, STOPS[1]]})
    assert main(["status", STACK, "--outputs", running["outputs"], "--json"]) == 0
    first = json.loads(capsys.readouterr().out)["interruptions"][0]
    assert first == {"kind": None, "stoppedAt": None, "resumedAt": None, "stoppedSeconds": None,
                     "resumedFromStep": 1200, "previousInstance": None, "inconsistent": why}
    monkeypatch.setenv("COLUMNS", "300")
    assert main(["status", STACK, "--outputs", running["outputs"]]) == 0
    assert (f"interruptions 2: inconsistent record ({why}); stopped 2026-12-01T06:00:00Z for 20 min, resumed "
            "2026-12-01T06:20:00Z (no checkpoint step reported)") in " ".join(capsys.readouterr().out.split())


def test_a_stop_of_exactly_the_runtime_cap_is_still_a_time(running, capsys) -> None:
    _put(running, "heartbeat", {"interruptions": [{**STOPS[0], "stoppedSeconds": 168 * 3600}]})
    assert main(["status", STACK, "--outputs", running["outputs"], "--json"]) == 0
    [shown] = json.loads(capsys.readouterr().out)["interruptions"]
    assert shown["stoppedSeconds"] == 168 * 3600 and shown["inconsistent"] is None


def test_long_interruption_texts_are_cut(running, capsys) -> None:
    _put(running, "heartbeat", {"interruptions": [{**STOPS[0], "stoppedAt": "x" * 5000, "resumedAt": "y" * 5000,
                                                   "kind": "new-instance", "previousInstance": "i-" + "0" * 5000}]})
    assert main(["status", STACK, "--outputs", running["outputs"], "--json"]) == 0
    [shown] = json.loads(capsys.readouterr().out)["interruptions"]
    assert (shown["stoppedAt"], shown["resumedAt"]) == ("x" * 64, "y" * 64)
    assert shown["previousInstance"] == "i-" + "0" * 126
