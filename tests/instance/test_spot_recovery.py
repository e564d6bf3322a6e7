"""Spot recovery on the instance (``spot_recover``): a notice saves and syncs and never shuts the instance down (the
cloud stops it and starts it again); the watchdog's own end cancels its own spot request first, then shuts down."""

from __future__ import annotations

import json
from pathlib import Path

import botocore.session
import pytest
from botocore import xform_name

from instance import spot_request
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

START = DEADLINE_EPOCH - 6 * 3600
INSTANCE = "i-0123456789abcdef0"
REQUEST = "sir-0abc1234"


def fake_aws(path: Path, events: Path, *, describe: str = REQUEST, cancel_state: str = "cancelled",
             exit_code: int = 0, request_state: str = "cancelled", state_exit: int | None = None) -> Path:
    """The AWS CLI's ec2 calls: describe-instances prints ``describe`` (the --query's text), cancel prints the
    JSON EC2 answers, describe-spot-instance-requests lists one request in ``request_state`` (as the stack's
    cancelling schedule leaves it); each call appends its argv and credential environment to ``events``. Every call
    exits ``exit_code``, the state read ``state_exit`` when given."""
    path.parent.mkdir(exist_ok=True)
    state_code = exit_code if state_exit is None else state_exit
    return executable(path, f"""import json, os, sys
args = sys.argv[1:]
env = {{k: v for k, v in os.environ.items() if k.startswith("AWS_")}}
with open({str(events)!r}, "a") as fh:
    fh.write(json.dumps({{"name": "aws-" + args[1], "argv": args, "env": env}}) + "\\n")
code = {state_code} if args[1] == "describe-spot-instance-requests" else {exit_code}
if code:
    print("An error occurred (UnauthorizedOperation)", file=sys.stderr)
    sys.exit(code)
if args[1] == "describe-spot-instance-requests":
    print(json.dumps({{"SpotInstanceRequests": [{{"SpotInstanceRequestId": {REQUEST!r}, "State": {request_state!r}}}]}}))
elif args[1] == "describe-instances":
    print({describe!r})
else:
    ids = args[args.index("--spot-instance-request-ids") + 1]
    print(json.dumps({{"CancelledSpotInstanceRequests": [{{"SpotInstanceRequestId": ids, "State": {cancel_state!r}}}]}}))
""")


def _events(rig) -> list[dict]:
    return [json.loads(line) for line in rig.events.read_text().splitlines()] if rig.events.exists() else []


def test_with_recovery_a_notice_saves_and_syncs_and_never_shuts_down_then_carries_on(tmp_path: Path) -> None:
    state = MetadataState(cloud="aws", instance_action={"action": "stop", "time": iso(START + 120)})
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, spot_recover=True, poll_seconds=30)
        dog, clock = run_in_process(rig, start=START, max_ticks=10)
        assert rig.names() == ["checkpoint-hook", "sync"] and not dog.done
        assert [e["env_reason"] for e in _events(rig)] == ["spot-interruption", "final"]
        log = rig.log_text()
        assert "no shutdown (spot recovery: the cloud stops this instance and starts it again" in log
        assert f"waiting for the cloud to stop this instance (until {iso(START + 120 + 600)}" in log
        saved = json.loads((Path(rig.settings["state_dir"]) / "watchdog-state.json").read_text())
        assert saved["spot_notice"]["windowEnd"] == iso(START + 120)
        # The cloud never stops it (the notice stays up): past the bound it carries on as on a normal boot, the
        # same notice is not acted on twice, and nothing shuts the instance down.
        dog.run(max_ticks=40)
    log = rig.log_text()
    assert "has not stopped this instance; carrying on as on a normal boot" in log
    assert rig.names() == ["checkpoint-hook", "sync"] and not dog.done and clock.now() > START + 720


def test_the_deadline_still_ends_an_instance_that_waits_for_the_clouds_stop(tmp_path: Path) -> None:
    start = DEADLINE_EPOCH - 6 * 60
    state = MetadataState(cloud="aws", instance_action={"action": "stop", "time": iso(start + 30)})
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, spot_recover=True, warn_hook=None, aws_command=str(
            fake_aws(tmp_path / "bin" / "aws-ec2", tmp_path / "events.jsonl")))
        dog, _ = run_in_process(rig, start=start, max_ticks=40)
    assert dog.done
    assert rig.names() == ["checkpoint-hook", "sync", "aws-describe-instances", "aws-cancel-spot-instance-requests",
                           "checkpoint-hook", "sync", "shutdown"]


@pytest.mark.parametrize("recover", ["true", 1, None])
def test_only_a_json_true_turns_recovery_on(tmp_path: Path, recover: object) -> None:
    state = MetadataState(cloud="aws", instance_action={"action": "stop", "time": iso(START + 120)})
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, spot_recover=recover)
        dog, _ = run_in_process(rig, start=START, max_ticks=5)
    assert dog.done and rig.names() == ["checkpoint-hook", "sync", "shutdown"]


def test_recovery_on_alibaba_cloud_saves_and_syncs_without_release_or_shutdown(tmp_path: Path) -> None:
    state = MetadataState(cloud="alicloud", termination_time=iso(START + 300))
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, cloud="alicloud", region="cn-hangzhou", spot_recover=True,
                       self_release=True)
        dog, _ = run_in_process(rig, start=START, max_ticks=10)
    assert not dog.done and rig.names() == ["checkpoint-hook", "sync"]
    assert "release" not in rig.log_text().replace("released at", "")


@pytest.mark.parametrize("cause", ["deadline", "idle"])
def test_the_watchdogs_own_end_cancels_its_own_spot_request_first_then_shuts_down(tmp_path: Path, cause: str) -> None:
    start = DEADLINE_EPOCH - 6 * 60 if cause == "deadline" else START
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, spot_recover=True, idle_minutes=2, warn_hook=None,
                       aws_command=str(fake_aws(tmp_path / "bin" / "aws-ec2", tmp_path / "events.jsonl")))
        if cause == "idle":
            set_gpus(rig.gpu_state, util=0)
        manifest = Path(rig.settings["mount_point"]) / "logs" / "manifest.json"
        manifest.write_text(json.dumps({"schema": 1, "job": "train"}))
        dog, _ = run_in_process(rig, start=start, max_ticks=100)
    assert dog.done
    names = rig.names()
    assert names[:2] == ["aws-describe-instances", "aws-cancel-spot-instance-requests"]
    assert names[-1] == "shutdown"
    describe, cancel = _events(rig)[:2]
    assert describe["argv"] == ["ec2", "describe-instances", "--region", "us-east-1", "--instance-ids", INSTANCE,
                                "--query", "Reservations[0].Instances[0].SpotInstanceRequestId", "--output", "text"]
    assert cancel["argv"] == ["ec2", "cancel-spot-instance-requests", "--region", "us-east-1",
                              "--spot-instance-request-ids", REQUEST, "--output", "json"]
    # The instance role only: told where IMDS is, no tokenless fallback, no other credential source.
    for call in (describe, cancel):
        assert call["env"]["AWS_EC2_METADATA_SERVICE_ENDPOINT"] == server.url + "/"
        assert call["env"]["AWS_EC2_METADATA_V1_DISABLED"] == "true"
        assert "AWS_ACCESS_KEY_ID" not in call["env"] and "AWS_PROFILE" not in call["env"]
    recorded = json.loads(manifest.read_text())["spotRequest"]
    assert (recorded["requestId"], recorded["cancelled"], recorded["state"], recorded["cause"]) == (
        REQUEST, True, "cancelled", "deadline" if cause == "deadline" else "idle-shutdown")
    saved = json.loads((Path(rig.settings["state_dir"]) / "watchdog-state.json").read_text())
    assert saved["spot_request"]["cancelled"] is True
    assert f"spot request {REQUEST} is cancelled: it launches nothing more" in rig.log_text()


def test_a_cancel_that_keeps_failing_is_retried_within_its_bound_and_the_shutdown_follows(tmp_path: Path) -> None:
    start = DEADLINE_EPOCH - 6 * 60
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, spot_recover=True, spot_cancel_seconds=20,
                       aws_command=str(fake_aws(tmp_path / "bin" / "aws-ec2", tmp_path / "events.jsonl", exit_code=254,
                                                state_exit=0)))
        dog, _ = run_in_process(rig, start=start, max_ticks=20)
    assert dog.done and rig.names()[-1] == "shutdown"
    tries = [n for n in rig.names() if n in ("aws-describe-instances", "aws-cancel-spot-instance-requests")]
    # Each try is followed by a 5 s pause: at most 20 s / 5 s of them (spot_cancel_seconds), and more than one.
    assert 2 <= len(tries) <= 4 and set(tries) == {"aws-describe-instances"}
    saved = json.loads((Path(rig.settings["state_dir"]) / "watchdog-state.json").read_text())["spot_request"]
    assert saved["cancelled"] is False and saved["attempts"] == len(tries)
    assert "gave up after" in saved["detail"] and "within 20 s" in saved["detail"]
    assert "no shutdown before the stack's schedule has cancelled the request" in rig.log_text()
    assert rig.names()[-2] == "aws-describe-spot-instance-requests"  # the schedule's cancel read, then the shutdown


def test_a_request_that_does_not_end_cancelled_counts_as_not_cancelled(tmp_path: Path) -> None:
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, spot_recover=True, spot_cancel_seconds=10, aws_command=str(
            fake_aws(tmp_path / "bin" / "aws-ec2", tmp_path / "events.jsonl", cancel_state="active")))
        dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 6 * 60, max_ticks=20)
    saved = json.loads((Path(rig.settings["state_dir"]) / "watchdog-state.json").read_text())["spot_request"]
    assert dog.done and saved["cancelled"] is False and saved["state"] == "active"


@pytest.mark.parametrize("printed", ["None", "sir-0abc1234\nextra; rm -rf /"])
def test_an_instance_without_a_request_or_an_odd_answer_cancels_nothing(tmp_path: Path, printed: str) -> None:
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, spot_recover=True, spot_cancel_seconds=10, aws_command=str(
            fake_aws(tmp_path / "bin" / "aws-ec2", tmp_path / "events.jsonl", describe=printed)))
        dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 6 * 60, max_ticks=20)
    assert dog.done and "aws-cancel-spot-instance-requests" not in rig.names() and rig.names()[-1] == "shutdown"


def test_without_recovery_the_own_end_calls_no_aws_api(tmp_path: Path) -> None:
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, warn_hook=None, aws_command=str(
            fake_aws(tmp_path / "bin" / "aws-ec2", tmp_path / "events.jsonl")))
        dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 6 * 60, max_ticks=20)
    assert dog.done and rig.names() == ["checkpoint-hook", "sync", "shutdown"]


def test_the_cancel_calls_are_the_ec2_api_operations_they_name() -> None:
    """The CLI's command and option names are botocore's operation and member names, hyphenated (xform_name)."""
    model = botocore.session.get_session().get_service_model("ec2")
    for template, member in ((spot_request.DESCRIBE, "InstanceIds"), (spot_request.CANCEL, "SpotInstanceRequestIds")):
        [operation] = [o for o in model.operation_names if xform_name(o, "-") == template[2]]
        assert member in model.operation_model(operation).input_shape.members
        assert f"--{xform_name(member, '-')}" in template
    cancelled = model.operation_model("CancelSpotInstanceRequests").output_shape.members["CancelledSpotInstanceRequests"]
    assert set(cancelled.member.members["State"].enum) == {"active", "open", "closed", "cancelled", "completed"}
    assert "SpotInstanceRequestId" in model.shape_for("Instance").members
