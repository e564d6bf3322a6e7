"""The watchdog's end at the deadline with spot recovery on AWS when its own cancel failed (instance/watchdog.py
``after_schedule_cancel``, instance/spot_request.py ``request_state``): no shutdown before the stack's cancelling
schedule has certainly fired (the deadline less ``spot_schedule_lead``, plus ``spot_schedule_precision``), then one
read of the request's state; a shutdown only when EC2 says it has ended, else none (the stack's terminating schedule
ends the instance) and the cancel retried. And a power-off after a notice the cloud did not act on cancels the
request as any power-off from inside does."""

from __future__ import annotations

import json
import re
from pathlib import Path

import botocore.session
import pytest
from botocore import xform_name

from instance import bounds, spot_request
from tests.instance.test_spot_recovery import START, fake_aws
from tests.support.instance import (
    DEADLINE_EPOCH,
    MetadataServer,
    MetadataState,
    executable,
    iso,
    make_rig,
    run_in_process,
)

FIRED = DEADLINE_EPOCH - 120 + 60  # the stack's cancel schedule (deadline - 2 min) has certainly fired by then


def _stamped(rig, event: str) -> list[str]:
    """The log's timestamps of each ``event:`` line."""
    return re.findall(rf"^(\S+) {re.escape(event)}:", rig.log_text(), flags=re.M)


def _saved(rig) -> dict:
    return json.loads((Path(rig.settings["state_dir"]) / "watchdog-state.json").read_text())["spot_request"]


def _rig(tmp_path: Path, server, **aws):
    return make_rig(tmp_path, metadata_url=server.url, spot_recover=True, warn_hook=None, aws_command=str(
        fake_aws(tmp_path / "bin" / "aws-ec2", tmp_path / "events.jsonl", exit_code=254, **aws)))


def test_a_failed_cancel_at_the_deadline_shuts_down_only_after_the_schedules_cancel_has_fired(tmp_path: Path) -> None:
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = _rig(tmp_path, server, state_exit=0)  # own calls refused; the schedule's cancel went through
        dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 6 * 60, max_ticks=20)
    assert dog.done and rig.names()[-2:] == ["aws-describe-spot-instance-requests", "shutdown"]
    [shutdown] = _stamped(rig, "shutdown")
    assert shutdown >= iso(FIRED)  # the probe saw it at deadline - 4 min, before the schedule (deadline - 2 min)
    assert f"until {iso(FIRED)}, for the stack's schedule to cancel the request" in rig.log_text()
    saved = _saved(rig)
    assert saved["requestEnded"] is True and saved["stateReadAt"] >= iso(FIRED)
    assert "describe-spot-instance-requests (instance i-0123456789abcdef0): cancelled; it launches nothing more" in (
        saved["stateRead"])


@pytest.mark.parametrize(("state", "state_exit"), [("active", 0), ("open", 0), ("cancelled", 254)])
def test_a_request_not_read_as_ended_leaves_the_end_to_the_schedule_and_retries(tmp_path: Path, state: str,
                                                                               state_exit: int) -> None:
    aws = tmp_path / "bin" / "aws-ec2"
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = _rig(tmp_path, server, request_state=state, state_exit=state_exit)
        dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 6 * 60, max_ticks=40)
        assert not dog.done and "shutdown" not in rig.names()
        assert ("NOT shutting down (that would terminate this instance and re-open the request): the stack's schedule "
                "terminates this instance at the deadline") in rig.log_text()
        assert _saved(rig)["requestEnded"] is False
        fake_aws(aws, tmp_path / "events.jsonl")  # EC2 answers the own cancel again
        dog.run(max_ticks=40)  # the retry comes spot_cancel_retry (300 s) later
    assert dog.done and rig.names()[-3:] == ["aws-describe-instances", "aws-cancel-spot-instance-requests", "shutdown"]
    assert _stamped(rig, "shutdown")[0] >= iso(FIRED + bounds.value("spot_cancel_retry"))


def test_a_retry_after_the_deadline_shuts_down_once_the_request_reads_as_ended(tmp_path: Path) -> None:
    aws = tmp_path / "bin" / "aws-ec2"
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = _rig(tmp_path, server, request_state="active", state_exit=0)
        dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 6 * 60, max_ticks=40)
        assert not dog.done
        # The own cancel still fails; the schedule's retry has cancelled the request since.
        fake_aws(aws, tmp_path / "events.jsonl", exit_code=254, request_state="cancelled", state_exit=0)
        dog.run(max_ticks=40)
    assert dog.done and rig.names()[-2:] == ["aws-describe-spot-instance-requests", "shutdown"]
    assert _saved(rig)["requestEnded"] is True


def test_the_state_read_with_the_request_id_unknown_filters_by_this_instance(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = _rig(tmp_path, server, state_exit=0)
        run_in_process(rig, start=DEADLINE_EPOCH - 6 * 60, max_ticks=20)
    [read] = [e for e in map(json.loads, events.read_text().splitlines())
              if e["name"] == "aws-describe-spot-instance-requests"]
    assert read["argv"] == ["ec2", "describe-spot-instance-requests", "--region", "us-east-1", "--filters",
                            "Name=instance-id,Values=i-0123456789abcdef0", "--output", "json"]
    assert read["env"]["AWS_EC2_METADATA_V1_DISABLED"] == "true" and "AWS_PROFILE" not in read["env"]


@pytest.mark.parametrize(("printed", "ended"), [
    ('{"SpotInstanceRequests": []}', False),
    ('{"SpotInstanceRequests": [{"State": "cancelled"}, {"State": "active"}]}', False),
    ('{"SpotInstanceRequests": [{"State": "failed"}]}', False),
    ("not json", False),
    ('{"SpotInstanceRequests": [{"State": "closed"}, {"State": "completed"}]}', True),
])
def test_only_every_listed_request_ended_counts_as_ended(tmp_path: Path, printed: str, ended: bool) -> None:
    aws = executable(tmp_path / "aws", f"print({printed!r})\n")
    metadata = spot_request.ca.Metadata("aws", "http://127.0.0.1:9", 1.0)
    got, detail = spot_request.request_state({"aws_command": str(aws), "region": "us-east-1"}, "i-0abc", "sir-0abc",
                                             metadata, _Credentials(), 10.0)
    assert got is ended, detail


class _Credentials:
    """Role credentials as the instance role would give them (no metadata read)."""

    def get(self):
        return {"AccessKeyId": "AKIA", "SecretAccessKey": "s", "Token": "t", "Expiration": "2099-01-01T00:00:00Z"}


def test_the_state_read_is_the_ec2_operation_it_names() -> None:
    model = botocore.session.get_session().get_service_model("ec2")
    [operation] = [o for o in model.operation_names if xform_name(o, "-") == spot_request.STATE_BY_ID[2]]
    members = model.operation_model(operation).input_shape.members
    assert "SpotInstanceRequestIds" in members and "Filters" in members
    assert "--spot-instance-request-ids" in spot_request.STATE_BY_ID and "--filters" in spot_request.STATE_BY_INSTANCE
    states = set(model.shape_for("SpotInstanceRequest").members["State"].enum)
    assert set(spot_request.ENDED) - {"completed"} <= states and "failed" in states


def test_the_wait_and_the_read_fit_in_the_schedules_lead() -> None:
    """The wait for the cancelling schedule (its precision) and the one state read end before the terminating
    schedule's time; the lead is the stack's own (components/aws/lifetime.py), the precision the pack's."""
    from components.aws.lifetime import CANCEL_LEAD
    from policies.guardrails.deadlines import SCHEDULER_PRECISION

    assert bounds.value("spot_schedule_lead") == CANCEL_LEAD.total_seconds()
    assert bounds.value("spot_schedule_precision") == SCHEDULER_PRECISION.total_seconds()
    assert "spot_schedule_lead" not in " ".join(bounds.outer_covers_inner())
    assert bounds.inside("spot_schedule_lead") == bounds.value("spot_schedule_precision") + bounds.value("aws_call")


def test_a_power_off_after_a_notice_the_cloud_did_not_act_on_cancels_the_request(tmp_path: Path) -> None:
    state = MetadataState(cloud="aws", instance_action={"action": "stop", "time": iso(START + 120)})
    jobs = executable(tmp_path / "systemctl", "print('1 poweroff.target start waiting')\n")
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, spot_recover=True, warn_hook=None, poll_seconds=30,
                       system_jobs_command=[str(jobs)],
                       aws_command=str(fake_aws(tmp_path / "bin" / "aws-ec2", tmp_path / "events.jsonl")))
        dog, _ = run_in_process(rig, start=START, max_ticks=40)  # notice, save, 10 min wait: no stop came
        assert "carrying on as on a normal boot" in rig.log_text()
        state.instance_action = None  # the notice is withdrawn
        dog.run(max_ticks=20)
        dog.stop()  # SIGTERM while powering off: the job's `sudo poweroff`
    assert rig.names()[-3:] == ["aws-describe-instances", "aws-cancel-spot-instance-requests", "sync"]
    assert _saved(rig)["cause"] == "power-off"
