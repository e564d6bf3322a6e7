"""The watchdog's own end with spot recovery on AWS fails closed (instance/watchdog.py, instance/spot_request.py):
an end before the deadline whose cancel failed does not shut down (that would terminate the instance and open the
persistent request again) but retries the cancel; a power-off from inside cancels the request first; only a
``None`` answer means "no request"; a request id other than the one recorded is recorded; the wait for the cloud's
stop is timed on the monotonic clock; a handled notice marks the next boot's gap as a stop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.instance.test_spot_recovery import INSTANCE, REQUEST, START, _events, fake_aws
from tests.support.instance import (
    DEADLINE_EPOCH,
    MetadataServer,
    MetadataState,
    executable,
    iso,
    make_rig,
    run_in_process,
    set_gpus,
)

FIRST = DEADLINE_EPOCH - 8 * 3600  # the first boot: the deadline is first boot + max_runtime_hours (8)


def _saved(rig) -> dict:
    return json.loads((Path(rig.settings["state_dir"]) / "watchdog-state.json").read_text())


def test_an_idle_end_whose_cancel_fails_does_not_shut_down_and_retries_until_cancelled(tmp_path: Path) -> None:
    aws = tmp_path / "bin" / "aws-ec2"
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, spot_recover=True, idle_minutes=2, warn_hook=None,
                       spot_cancel_seconds=10, aws_command=str(fake_aws(aws, tmp_path / "events.jsonl", exit_code=254)))
        set_gpus(rig.gpu_state, util=0)
        dog, _ = run_in_process(rig, start=START, max_ticks=30)  # idle from 2 min on
        assert not dog.done and "shutdown" not in rig.names()
        assert _saved(rig)["spot_request"]["outcome"] == "not cancelled: no shutdown, retrying"
        assert ("-> NOT shutting down (a shutdown would terminate this instance and open the request again): the "
                "cancel is retried every 300 s, the shutdown follows it, or the deadline") in rig.log_text()
        failed = len([n for n in rig.names() if n.startswith("aws-")])
        dog.run(max_ticks=30)  # 150 s more: no retry before 300 s
        assert not dog.done and len([n for n in rig.names() if n.startswith("aws-")]) == failed
        fake_aws(aws, tmp_path / "events.jsonl")  # EC2 answers again
        dog.run(max_ticks=60)
    assert dog.done and rig.names()[-3:] == ["aws-describe-instances", "aws-cancel-spot-instance-requests", "shutdown"]
    assert _saved(rig)["spot_request"]["cancelled"] is True


def test_an_empty_describe_answer_is_not_no_request(tmp_path: Path) -> None:
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, spot_recover=True, warn_hook=None, spot_cancel_seconds=20,
                       aws_command=str(fake_aws(tmp_path / "bin" / "aws-ec2", tmp_path / "events.jsonl", describe="")))
        run_in_process(rig, start=DEADLINE_EPOCH - 6 * 60, max_ticks=20)
    saved = _saved(rig)["spot_request"]
    assert saved["state"] is None and saved["cancelled"] is False and saved["attempts"] >= 2
    assert "describe-instances printed '', not a spot request id" in saved["detail"]


def test_a_request_id_other_than_the_recorded_one_is_recorded(tmp_path: Path) -> None:
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, spot_recover=True, warn_hook=None,
                       aws_command=str(fake_aws(tmp_path / "bin" / "aws-ec2", tmp_path / "events.jsonl")))
        state_dir = Path(rig.settings["state_dir"])
        state_dir.mkdir(parents=True, exist_ok=True)
        # An earlier boot of this instance recorded another request id than the one EC2 names now.
        (state_dir / "identity.json").write_text(json.dumps({"instanceId": INSTANCE, "boots": [
            {"boot": "earlier-boot", "bootTime": FIRST, "lastAlive": FIRST + 60}]}))
        (state_dir / "watchdog-state.json").write_text(json.dumps({"first_boot": FIRST,
                                                                   "spot_request": {"requestId": "sir-0old1111"}}))
        run_in_process(rig, start=DEADLINE_EPOCH - 6 * 60, max_ticks=20)
    saved = _saved(rig)["spot_request"]
    assert (saved["requestId"], saved["otherRequestId"], saved["cancelled"]) == (REQUEST, "sir-0old1111", True)
    assert f"describe-instances names {REQUEST}, not sir-0old1111 as recorded before" in rig.log_text()


def _jobs(tmp_path: Path, printed: str, code: int = 0) -> str:
    (tmp_path / "bin").mkdir(exist_ok=True)
    return str(executable(tmp_path / "bin" / "systemctl", f"import sys\nprint({printed!r})\nsys.exit({code})\n"))


@pytest.mark.parametrize(("printed", "code", "cancels"), [
    ("1210 poweroff.target start waiting\n1211 gpulease-watchdog.service stop running", 0, True),
    ("1210 halt.target start waiting", 0, True),
    ("1210 reboot.target start waiting\n1211 gpulease-watchdog.service stop running", 0, False),
    ("1211 gpulease-watchdog.service stop running", 0, False),  # the service alone is stopped or restarted
    ("Failed to connect to bus", 1, True),  # cannot tell: the request is not left to open again
])
def test_sigterm_on_a_power_off_cancels_the_own_request_before_the_final_sync(tmp_path: Path, printed: str,
                                                                             code: int, cancels: bool) -> None:
    (tmp_path / "bin").mkdir(exist_ok=True)
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, spot_recover=True, warn_hook=None, system_jobs_seconds=40,
                       system_jobs_command=[_jobs(tmp_path, printed, code)],
                       aws_command=str(fake_aws(tmp_path / "bin" / "aws-ec2", tmp_path / "events.jsonl")))
        dog, _ = run_in_process(rig, start=START, max_ticks=2)
        dog.stop()
    expected = ["aws-describe-instances", "aws-cancel-spot-instance-requests"] if cancels else []
    assert rig.names() == [*expected, "sync"]
    if cancels:
        assert _saved(rig)["spot_request"]["cause"] == "power-off"
        assert "-> cancel this instance's spot request first" in rig.log_text()
    else:
        assert "the spot request is kept" in rig.log_text()
        assert ("(reboot.target queued)" in rig.log_text()) is ("reboot.target" in printed)


def test_sigterm_after_a_handled_notice_leaves_the_request_alone(tmp_path: Path) -> None:
    state = MetadataState(cloud="aws", instance_action={"action": "stop", "time": iso(START + 120)})
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, spot_recover=True, warn_hook=None,
                       system_jobs_command=[_jobs(tmp_path, "1 poweroff.target start waiting")],
                       aws_command=str(fake_aws(tmp_path / "bin" / "aws-ec2", tmp_path / "events.jsonl")))
        dog, _ = run_in_process(rig, start=START, max_ticks=5)
        dog.stop()  # the cloud stopping this instance after the notice: the request must stay to start it again
    assert not any(n.startswith("aws-") for n in rig.names())


def test_the_wait_for_the_clouds_stop_is_timed_on_the_monotonic_clock(tmp_path: Path) -> None:
    state = MetadataState(cloud="aws", instance_action={"action": "stop", "time": iso(START + 120)})
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, spot_recover=True, poll_seconds=30)
        dog, clock = run_in_process(rig, start=START, max_ticks=4)
        assert "waiting for the cloud to stop this instance" in rig.log_text()
        clock.jump(-3600)  # the wall clock steps back an hour (NTP, a bad RTC)
        dog.run(max_ticks=30)  # 750 s of monotonic time: past the window (120 s) and the wait (600 s)
    assert "has not stopped this instance; carrying on as on a normal boot" in rig.log_text()


def test_a_handled_notice_marks_the_coming_stop_for_the_next_boot(tmp_path: Path) -> None:
    state = MetadataState(cloud="aws", instance_action={"action": "stop", "time": iso(START + 120)},
                          instance_id=INSTANCE)
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, spot_recover=True)
        run_in_process(rig, start=START, max_ticks=4)
    identity = json.loads((Path(rig.settings["state_dir"]) / "identity.json").read_text())
    assert identity["boots"][-1]["stopExpected"] == f"spot-interruption: spot instance-action stop at {iso(START + 120)}"
    assert _events(rig)
