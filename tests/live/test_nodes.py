"""Every node of a cluster: ``gpulease ssh --node N`` through rank 0 as a jump host in ssh mode (its instance id in
the no-port modes), ``status`` with a line per node from each node's own control area, the heartbeat's disks (low
space marked) and a starved loader (distinct from idle), and ``status --watch`` (bounded, Ctrl-C clean)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from components import userdata
from components.image_bake import node_control_folder
from gpulease.cli import status as status_cli
from gpulease.cli.main import EXIT_BAD_INPUT, main
from gpulease.core import vocabulary as v
from gpulease.live import clients as live_clients
from gpulease.live import view
from tests.support.alicloud import user_data_text
from tests.support.clock import FIXED_NOW
from tests.support.specs import experiment, render_experiment
from tests.support.userdata import decode

CLUSTER = "aws-cluster-4x8"  # ssh mode, user ubuntu, 4 nodes, checkpoints prefix pretrain/
BUCKET = "gpulease-pretrain-ckpt"
KEEPALIVE = "-o ServerAliveInterval=30 -o ServerAliveCountMax=10"
NODES = [{"rank": r, "instanceId": f"i-0node{r}", "privateIp": f"172.31.0.{10 + r}"} for r in range(4)]


def _stamp(minutes_ago: float) -> str:
    return v.rfc3339(FIXED_NOW - timedelta(minutes=minutes_ago))


def _outputs(tmp_path: Path, **extra: Any) -> str:
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"instanceId": "i-0node0", "publicIp": "198.51.100.7",
                                "checkpointUri": f"s3://{BUCKET}/pretrain/", "nodes": NODES, **extra}))
    return str(path)


def test_ssh_node_goes_through_rank_0_as_a_jump_host(tmp_path, capsys):
    assert main(["ssh", CLUSTER, "--node", "2", "--print", "--outputs", _outputs(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"ssh {KEEPALIVE} -J ubuntu@198.51.100.7 ubuntu@172.31.0.12"]
    assert main(["ssh", CLUSTER, "--node", "0", "--print", "--outputs", _outputs(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"ssh {KEEPALIVE} ubuntu@198.51.100.7"]
    # A key file: the hop carries it too (-J would not hand -i to the jump connection).
    assert main(["ssh", CLUSTER, "--node", "1", "--print", "-i", "/k/id", "--outputs", _outputs(tmp_path)]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert line == (f"ssh {KEEPALIVE} -i /k/id -o 'ProxyCommand=ssh {KEEPALIVE} -i /k/id -W %h:%p ubuntu@198.51.100.7' "
                    "ubuntu@172.31.0.11")


def test_ssh_node_that_does_not_exist_is_one_line(tmp_path, capsys):
    assert main(["ssh", CLUSTER, "--node", "7", "--print", "--outputs", _outputs(tmp_path)]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err == (f"gpulease: stack '{CLUSTER}': --node 7: no such node; accepted: 0, 1, 2, 3\n")
    with pytest.raises(SystemExit) as stopped:  # argparse's own refusal: usage and one line, exit 2
        main(["ssh", CLUSTER, "--node", "x", "--print"])
    assert stopped.value.code == EXIT_BAD_INPUT
    assert "argument --node: 'x' is not a node rank" in capsys.readouterr().err


def test_ssh_node_in_ssm_mode_targets_the_node_s_instance(tmp_path, capsys):
    out = tmp_path / "o.json"
    out.write_text(json.dumps({"instanceId": "i-0node0", "sshCommand": "aws ssm start-session --target i-0node0",
                               "nodes": NODES}))
    assert main(["ssh", "some-ci-stack", "--node", "3", "--print", "--outputs", str(out), "--region", "us-east-1"]) == 0
    assert capsys.readouterr().out.splitlines() == ["aws ssm start-session --target i-0node3 --region us-east-1"]


@pytest.fixture
def cluster(aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    s3 = aws.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    disks = [{"mount": "/data", "freeBytes": 40 * 2**30, "totalBytes": 1000 * 2**30, "freePercent": 4.0},
             {"mount": "/", "freeBytes": 150 * 2**30, "totalBytes": 200 * 2**30, "freePercent": 75.0}]
    for rank in range(4):
        reports = node_control_folder("pretrain/", rank)  # where node `rank` writes its reports
        beat = {"time": _stamp(2 + rank), "instanceId": f"i-0node{rank}",
                "gpus": [{"utilizationPercent": 38 if rank == 1 else 97, "memoryUsedMib": 30000,
                          "memoryTotalMib": 40960}],
                "disks": disks if rank == 0 else disks[1:],
                "gpuStarved": {"since": _stamp(50), "meanUtilizationPercent": 38, "thresholdPercent": 60}
                if rank == 1 else None}
        s3.put_object(Bucket=BUCKET, Key=f"{reports}heartbeat.json", Body=json.dumps(beat).encode())
        if rank != 3:
            s3.put_object(Bucket=BUCKET, Key=f"{reports}ready.json", Body=json.dumps(
                {"instanceId": f"i-0node{rank}", "ready": True, "failed": []}).encode())
    monkeypatch.setattr(live_clients, "CLIENTS", lambda cloud, region: live_clients.Clients(bucket=s3))
    monkeypatch.setattr("gpulease.core.clock.utcnow", lambda: FIXED_NOW)
    return {"outputs": _outputs(tmp_path), "s3": s3}


def test_status_reads_every_node_its_disks_and_a_starved_loader(cluster, capsys):
    assert main(["status", CLUSTER, "--outputs", cluster["outputs"], "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [n["rank"] for n in doc["nodes"]] == [0, 1, 2, 3]
    assert [n["instanceId"] for n in doc["nodes"]] == ["i-0node0", "i-0node1", "i-0node2", "i-0node3"]
    assert [n["ready"] for n in doc["nodes"]] == [True, True, True, None]
    assert [n["heartbeatAgeMinutes"] for n in doc["nodes"]] == [2.0, 3.0, 4.0, 5.0]
    assert doc["heartbeat"]["disks"][0] == {"mount": "/data", "freeBytes": 40 * 2**30, "totalBytes": 1000 * 2**30,
                                            "freePercent": 4.0, "low": True}
    assert doc["heartbeat"]["disks"][1]["low"] is False
    assert doc["nodes"][1]["gpuStarved"] == {"since": v.rfc3339(FIXED_NOW - timedelta(minutes=50)),
                                             "meanUtilizationPercent": 38, "thresholdPercent": 60}
    assert doc["heartbeat"]["gpuStarved"] is None and doc["nodes"][2]["gpuStarved"] is None


def test_status_screen_marks_low_disk_and_the_starved_node(cluster, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["status", CLUSTER, "--outputs", cluster["outputs"]]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "/data 40.0 GiB free of 1,000.0 GiB (4%) LOW: a checkpoint may not fit" in out
    assert "node 1 i-0node1 172.31.0.11 ready; GPU 38%; heartbeat 3 min ago; STARVED since" in out
    assert "below 60% (not idle: the input pipeline cannot keep up?)" in out
    assert "node 3 i-0node3 172.31.0.13 not ready yet" in out


def test_disk_and_starved_views_ignore_malformed_reports():
    from gpulease.live.status import disk_view, starved_view

    assert disk_view([{"mount": "/data", "freePercent": True}, "junk", {"freePercent": 3}]) == [
        {"mount": "/data", "freeBytes": None, "totalBytes": None, "freePercent": None, "low": False}]
    assert starved_view({"since": None}) is None and starved_view("x") is None
    assert view.starved_line(None) is None


def test_status_watch_redraws_until_ctrl_c_and_stops_by_itself(cluster, capsys, monkeypatch):
    naps: list[float] = []

    def nap(seconds: float) -> None:
        naps.append(seconds)
        if len(naps) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(status_cli, "SLEEP", nap)
    assert main(["status", CLUSTER, "--outputs", cluster["outputs"], "--watch", "10", "--json"]) == 130
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and naps == [10.0, 10.0]  # one document per redraw, Ctrl-C ends with exit 130
    assert json.loads(lines[0])["nodes"][0]["rank"] == 0
    clock = iter([0.0, status_cli.WATCH_HOURS * 3600])
    monkeypatch.setattr(status_cli, "CLOCK", lambda: next(clock))
    naps.clear()
    assert main(["status", CLUSTER, "--outputs", cluster["outputs"], "--watch", "--json"]) == 0
    assert naps == []  # the bound reached: no more polling
    with pytest.raises(SystemExit) as stopped:
        main(["status", CLUSTER, "--watch", "1"])
    assert stopped.value.code == EXIT_BAD_INPUT
    assert "'1' is not a number of seconds in 5-3600" in capsys.readouterr().err


def test_every_node_carries_the_job_so_each_starts_gpulease_launch_by_itself():
    """The claim docs/journey.md makes: `job.command` travels to every node's settings, where gpulease-run starts it."""
    command = "cd /data/code && gpulease-launch train.py --epochs 1"
    r = render_experiment(experiment(name="pre", gpu={"instanceType": "p4d.24xlarge"}, nodes=2, budgetUsd=5000,
                                     job={"command": command}))
    assert r.error is None, r.error
    jobs = []
    for inst in sorted(r.of_type("aws:ec2/instance:Instance"), key=lambda x: x.name):
        text = user_data_text(inst) if "userData" in inst.inputs else decode(inst.inputs["userDataBase64"])
        written = {f["path"]: f for f in yaml.safe_load(text)["write_files"]}
        settings = json.loads(written[userdata.SETTINGS_PATH]["content"])
        jobs.append((settings["cluster"]["rank"], settings["job"]["command"], settings["job"]["session"]))
    assert jobs == [(0, command, "train"), (1, command, "train")]
