"""Spot interruption notices through a loopback metadata service: hook, then sync, then shutdown, in the window."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from components.userdata import SYNC_COMMANDS
from tests.support.instance import (
    ALI_CREDENTIALS,
    DEADLINE_EPOCH,
    TOKEN,
    MetadataServer,
    MetadataState,
    events,
    iso,
    make_rig,
    run_in_process,
)

START = DEADLINE_EPOCH - 6 * 3600


def test_aws_interruption_notice_runs_hook_then_sync_then_shutdown_with_imdsv2(tmp_path: Path) -> None:
    state = MetadataState(cloud="aws", instance_action={"action": "terminate", "time": iso(START + 120)})
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url)
        dog, _ = run_in_process(rig, start=START, max_ticks=5)
    assert dog.done
    assert rig.names() == ["checkpoint-hook", "sync", "shutdown"]
    assert events(rig.events)[0]["env_reason"] == "spot-interruption"
    assert events(rig.events)[1]["listing"][str(rig.checkpoints)] == ["step-100.pt"]
    # IMDSv2: a token first, then every read carries it.
    method, path, headers = state.requests[0]
    assert (method, path) == ("PUT", "/latest/api/token")
    assert headers["x-aws-ec2-metadata-token-ttl-seconds"] == "21600"
    gets = [r for r in state.requests if r[0] == "GET"]
    assert gets and all(h.get("x-aws-ec2-metadata-token") == TOKEN for _, _, h in gets)
    assert "/latest/meta-data/spot/instance-action" in [p for _, p, _ in gets]
    assert state.refused == []  # nothing was ever asked without a token
    assert f"spot instance-action terminate at {iso(START + 120)}" in rig.log_text()


def test_aws_rebalance_recommendation_checkpoints_once_and_keeps_running(tmp_path: Path) -> None:
    state = MetadataState(cloud="aws", rebalance={"noticeTime": iso(START)})
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url)
        dog, _ = run_in_process(rig, start=START, max_ticks=30)
        assert dog.rebalance_thread is not None
        dog.rebalance_thread.join(timeout=60)  # it runs beside the loop: on a loaded machine it may end after it
    assert not dog.done
    assert rig.names() == ["checkpoint-hook", "sync"]
    assert "/latest/meta-data/events/recommendations/rebalance" in [p for _, p, _ in state.requests]
    assert "keep running" in rig.log_text()


def test_aws_rebalance_can_be_told_to_shut_down(tmp_path: Path) -> None:
    state = MetadataState(cloud="aws", rebalance={"noticeTime": iso(START)})
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, on_rebalance="shutdown")
        dog, _ = run_in_process(rig, start=START, max_ticks=5)
    assert dog.done and rig.names() == ["checkpoint-hook", "sync", "shutdown"]


def test_an_expired_token_is_replaced(tmp_path: Path) -> None:
    state = MetadataState(cloud="aws")
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url)
        dog, clock = run_in_process(rig, start=START, max_ticks=2)
        dog.metadata._token = "stale"  # the service no longer accepts it: 401, then a fresh token
        state.instance_action = {"action": "stop", "time": iso(clock.now() + 120)}
        dog.run(max_ticks=2)
    assert dog.done and rig.names() == ["checkpoint-hook", "sync", "shutdown"]
    puts = [r for r in state.requests if r[0] == "PUT"]
    assert len(puts) == 2


def test_alibaba_termination_time_runs_hook_then_sync_then_shutdown(tmp_path: Path) -> None:
    state = MetadataState(cloud="alicloud", termination_time=iso(START + 300))
    with MetadataServer(state) as server:
        rig = make_rig(
            tmp_path,
            metadata_url=server.url,
            cloud="alicloud",
            region="cn-hangzhou",
            checkpoint_uri="oss://bucket/ckpt/",
        )
        rig.settings["sync_command"] = [rig.settings["sync_command"][0], *SYNC_COMMANDS["alicloud"][1:]]
        dog, _ = run_in_process(rig, start=START, max_ticks=5)
    assert dog.done and rig.names() == ["checkpoint-hook", "sync", "shutdown"]
    # ossutil gets the RAM role's STS credentials, read through the token, in a 0600 file; the endpoint is https.
    sync = events(rig.events)[1]
    config = sync["config"]
    assert sync["argv"] == ["cp", "-r", "-u", "-f", str(rig.checkpoints), "oss://bucket/ckpt/",
                            "-e", "https://oss-cn-hangzhou-internal.aliyuncs.com", "-c", config["path"],
                            "--sign-version", "v4", "--region", "cn-hangzhou"]
    assert config["mode"] == "0o600" and config["dir_mode"] == "0o700"
    assert config["text"] == (
        "[Credentials]\nlanguage=EN\nendpoint=https://oss-cn-hangzhou-internal.aliyuncs.com\n"
        f"accessKeyID={ALI_CREDENTIALS['AccessKeyId']}\naccessKeySecret={ALI_CREDENTIALS['AccessKeySecret']}\n"
        f"stsToken={ALI_CREDENTIALS['SecurityToken']}\n"
    )
    assert not Path(config["path"]).exists()  # removed after the call
    assert ALI_CREDENTIALS["AccessKeySecret"] not in rig.log_text() + " ".join(sync["argv"])
    assert state.refused == [] and {h.get("x-aliyun-ecs-metadata-token") for m, _, h in state.requests if m == "GET"} == {TOKEN}
    paths = [p for m, p, _ in state.requests if m == "GET"]
    assert "/latest/meta-data/instance/spot/termination-time" in paths
    assert f"spot instance to be released at {iso(START + 300)}" in rig.log_text()


def test_a_signal_hook_lets_the_training_process_write_its_checkpoint_before_the_sync(tmp_path: Path) -> None:
    marker = f"train-{tmp_path.name}.py"
    rig = make_rig(tmp_path, checkpoint_hook=None, checkpoint_signal="SIGUSR1", checkpoint_process=marker, proc_root="/proc")
    saved = rig.checkpoints / "step-200.pt"
    trainer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, sys, time\n"
            "def save(*_):\n"
            f"    open({str(saved)!r}, 'w').write('weights')\n"
            "    sys.exit(0)\n"
            "signal.signal(signal.SIGUSR1, save)\n"
            f"open({str(tmp_path / 'ready')!r}, 'w').close()\n"
            "time.sleep(60)\n",
            marker,
        ]
    )
    try:
        for _ in range(200):
            if (tmp_path / "ready").exists():
                break
            time.sleep(0.02)
        state = MetadataState(cloud="aws", instance_action={"action": "terminate", "time": iso(START + 120)})
        with MetadataServer(state) as server:
            rig.settings["metadata_url"] = server.url
            _dog, _ = run_in_process(rig, start=START, max_ticks=5)
        assert trainer.wait(timeout=10) == 0
    finally:
        trainer.kill()
    assert rig.names() == ["sync", "shutdown"]
    # The sync saw the checkpoint the signal asked for: the hook finished before the sync began.
    assert events(rig.events)[0]["listing"][str(rig.checkpoints)] == ["step-100.pt", "step-200.pt"]
    assert re.search(rf"sent SIGUSR1 to \[{trainer.pid}\]", rig.log_text())


def test_a_hook_that_hangs_is_cut_short_to_leave_the_window_to_the_sync(tmp_path: Path) -> None:
    hang = tmp_path / "hang"
    pid_file = tmp_path / "hang.pid"
    hang.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nsleep 30\n")
    hang.chmod(0o755)
    # 30 s of notice: 10 s are kept for the shutdown, half of the remaining 20 s goes to the hook.
    state = MetadataState(cloud="aws", instance_action={"action": "terminate", "time": iso(START + 30)})
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, checkpoint_hook=str(hang))
        started = time.monotonic()
        _dog, _ = run_in_process(rig, start=START, max_ticks=5)
    assert time.monotonic() - started < 10
    assert rig.names() == ["sync", "shutdown"]
    assert "checkpoint-hook: did not finish within 10 s (or was cut short); its process group was killed" in rig.log_text()
    # The hook is cut short with everything it started, not only the shell that ran it.
    stat = Path(f"/proc/{int(pid_file.read_text())}/stat")
    assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"  # gone, or dead and unreaped


def test_on_demand_instances_do_not_poll_for_spot_notices(tmp_path: Path) -> None:
    state = MetadataState(cloud="aws", instance_action={"action": "terminate", "time": iso(START + 120)})
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, market="on-demand")
        dog, _ = run_in_process(rig, start=START, max_ticks=20)
    # Only the deadline tag (and, once at start, the instance id the state is keyed by) is read: no spot notice is
    # ever asked for.
    assert {p for _, p, _ in state.requests} == {"/latest/api/token", "/latest/meta-data/tags/instance/gpulease:expires-at",
                                                 "/latest/meta-data/instance-id"}
    assert not dog.done
