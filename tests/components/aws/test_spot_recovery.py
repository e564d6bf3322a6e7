"""Spot recovery on AWS under mocks: the persistent request, its end (two schedules, cancel first), its tags, and who
may cancel it; the exact inputs the engine would send."""

from __future__ import annotations

import json

import pytest

from components import userdata
from gpulease.core import vocabulary as v
from gpulease.review.mocks import ACCOUNT_ID
from tests.support.specs import experiment, render_experiment
from tests.support.userdata import cloud_config, decode, files

INSTANCE = "aws:ec2/instance:Instance"
SCHEDULE = "aws:scheduler/schedule:Schedule"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
TAG = "aws:ec2/tag:Tag"
DEADLINE = "2026-12-01T16:00:00Z"  # FIXED_NOW + 8 h
ARN = f"arn:aws:ec2:us-east-1:{ACCOUNT_ID}"


@pytest.fixture(scope="module")
def recovering():
    r = render_experiment(experiment())
    assert r.error is None, r.error
    return r


@pytest.fixture(scope="module")
def one_time():
    r = render_experiment(experiment(spot={"recover": False}))
    assert r.error is None, r.error
    return r


def request_id(r) -> str:
    rid = r.one(INSTANCE).outputs["spotInstanceRequestId"]
    assert rid.startswith("sir-")
    return rid


def settings(r) -> dict:
    written = files(cloud_config(decode(r.one(INSTANCE).inputs["userDataBase64"])))
    return json.loads(written[userdata.SETTINGS_PATH]["content"])


def test_persistent_request_stopped_on_interruption_until_the_deadline(recovering) -> None:
    inst = recovering.one(INSTANCE)
    assert inst.inputs["instanceMarketOptions"] == {
        "marketType": "spot",
        "spotOptions": {"instanceInterruptionBehavior": "stop", "spotInstanceType": "persistent"},
    }
    # No valid_until: ForceNew, it would replace on a renewal or, ignored, keep a stale end on a replacement. The
    # request ends with the cancelling schedule, which follows the deadline.
    assert inst.ignore_changes == ["ami"]
    assert inst.delete_before_replace is True
    assert inst.inputs["instanceInitiatedShutdownBehavior"] == "terminate"


def test_max_price_kept_on_a_persistent_request() -> None:
    inst = render_experiment(experiment(maxSpotPriceUsd=0.45)).one(INSTANCE)
    assert inst.inputs["instanceMarketOptions"]["spotOptions"] == {
        "instanceInterruptionBehavior": "stop", "spotInstanceType": "persistent", "maxPrice": "0.45"}


def test_opted_out_is_the_one_time_request_as_before(one_time) -> None:
    inst = one_time.one(INSTANCE)
    assert inst.inputs["instanceMarketOptions"] == {
        "marketType": "spot", "spotOptions": {"instanceInterruptionBehavior": "terminate", "spotInstanceType": "one-time"}}
    assert inst.ignore_changes == ["ami"]
    assert [s.name for s in one_time.of_type(SCHEDULE)] == ["exp1-deadline"]
    assert one_time.of_type(TAG) == []
    assert not [p for p in one_time.of_type(ROLE_POLICY) if p.name.endswith("cancel-own-spot-request")]
    assert "spot_recover" not in settings(one_time)


def test_cancel_schedule_fires_before_the_termination_each_one_call(recovering) -> None:
    inst = recovering.one(INSTANCE)
    by_name = {s.name: s for s in recovering.of_type(SCHEDULE)}
    assert set(by_name) == {"exp1-deadline", "exp1-spot-cancel"}
    cancel, terminate = by_name["exp1-spot-cancel"].inputs, by_name["exp1-deadline"].inputs
    assert cancel["scheduleExpression"] == "at(2026-12-01T15:58:00)"
    assert terminate["scheduleExpression"] == "at(2026-12-01T16:00:00)"
    assert cancel["target"]["arn"] == "arn:aws:scheduler:::aws-sdk:ec2:cancelSpotInstanceRequests"
    assert json.loads(cancel["target"]["input"]) == {"SpotInstanceRequestIds": [request_id(recovering)]}
    assert terminate["target"]["arn"] == "arn:aws:scheduler:::aws-sdk:ec2:terminateInstances"
    assert json.loads(terminate["target"]["input"]) == {"InstanceIds": [inst.id]}
    for s in (cancel, terminate):
        assert (s["scheduleExpressionTimezone"], s["flexibleTimeWindow"], s["actionAfterCompletion"], s["state"]) == (
            "UTC", {"mode": "OFF"}, "DELETE", "ENABLED")
        assert s["target"]["retryPolicy"] == {"maximumEventAgeInSeconds": 86400, "maximumRetryAttempts": 185}
        assert s["target"]["roleArn"] == f"arn:aws:iam::{ACCOUNT_ID}:role/gpl-org-unknown-exp1-deadline"


def test_scheduler_role_terminates_the_instance_and_cancels_its_request_only(recovering) -> None:
    inst = recovering.one(INSTANCE)
    policy = json.loads(next(p for p in recovering.of_type(ROLE_POLICY) if p.name == "exp1-deadline-terminate")
                        .inputs["policy"])
    assert policy["Statement"] == [
        {"Sid": "TerminateThisInstance", "Effect": "Allow", "Action": "ec2:TerminateInstances",
         "Resource": f"{ARN}:instance/{inst.id}"},
        {"Sid": "CancelThisSpotRequest", "Effect": "Allow", "Action": "ec2:CancelSpotInstanceRequests",
         "Resource": f"{ARN}:spot-instances-request/{request_id(recovering)}"},
    ]


def test_instance_role_may_cancel_its_own_request_after_the_instance(recovering) -> None:
    inst = recovering.one(INSTANCE)
    policy = next(p for p in recovering.of_type(ROLE_POLICY) if p.name == "exp1-cancel-own-spot-request")
    role = next(r for r in recovering.of_type("aws:iam/role:Role") if r.name.endswith("instance-role"))
    assert policy.inputs["role"] == role.id
    assert inst.urn in policy.property_dependencies["policy"]  # created once the request's id is known
    assert json.loads(policy.inputs["policy"])["Statement"] == [
        {"Sid": "CancelOwnSpotRequest", "Effect": "Allow", "Action": "ec2:CancelSpotInstanceRequests",
         "Resource": f"{ARN}:spot-instances-request/{request_id(recovering)}"},
        {"Sid": "FindOwnSpotRequest", "Effect": "Allow",
         "Action": ["ec2:DescribeInstances", "ec2:DescribeSpotInstanceRequests"], "Resource": "*"},
    ]


def test_the_request_carries_the_instance_tags(recovering) -> None:
    inst = recovering.one(INSTANCE)
    tags = {t.inputs["key"]: t for t in recovering.of_type(TAG)}
    assert set(tags) == {v.TAG_MANAGED_BY, v.TAG_STACK, v.TAG_EXPERIMENT, v.TAG_EXPIRES_AT}
    for key, tag in tags.items():
        assert tag.inputs["resourceId"] == request_id(recovering)
        assert tag.inputs["value"] == inst.inputs["tags"][key]
        assert inst.urn in tag.property_dependencies["resourceId"]
    assert tags[v.TAG_EXPIRES_AT].inputs["value"] == DEADLINE
    assert tags[v.TAG_STACK].inputs["value"] == "test"
    assert tags[v.TAG_EXPERIMENT].inputs["value"] == "exp1"  # up cancels only the requests of what it parks
    # Kept on the request when the stack deletes them: a request a replacement or destroy left open stays findable.
    assert [t.retain_on_delete for t in tags.values()] == [True, True, True, True]


def test_the_watchdog_is_told_to_leave_a_reclaim_to_the_cloud(recovering) -> None:
    assert settings(recovering)["spot_recover"] is True


def test_on_demand_and_clusters_never_recover() -> None:
    od = render_experiment(experiment(market="on-demand", onDemandReason="interactive profiling - no interruptions"))
    assert od.error is None, od.error
    assert "instanceMarketOptions" not in od.one(INSTANCE).inputs
    assert [s.name for s in od.of_type(SCHEDULE)] == ["exp1-deadline"] and od.of_type(TAG) == []
    cluster = render_experiment(experiment(nodes=2, gpu={"instanceType": "p4d.24xlarge"}))
    assert cluster.error is None, cluster.error
    for inst in cluster.of_type(INSTANCE):
        assert inst.inputs["instanceMarketOptions"]["spotOptions"]["spotInstanceType"] == "one-time"
    assert all(s.inputs["target"]["arn"].endswith("terminateInstances") for s in cluster.of_type(SCHEDULE))


def test_an_empty_spot_request_id_fails_the_deployment_with_one_line() -> None:
    """Without its request's id the cancel would name ``[""]`` and the ARNs end in ``/``: fail, never deploy that."""
    from gpulease.review.mocks import CloudMocks

    class NoRequestId(CloudMocks):
        def new_resource(self, args):
            rid, outputs = super().new_resource(args)
            return rid, ({**outputs, "spotInstanceRequestId": ""} if args.typ == INSTANCE else outputs)

    r = render_experiment(experiment(), mocks=NoRequestId(region="us-east-1"))
    assert r.error is not None
    assert "experiment 'exp1': the spot instance came back without its spot request id" in r.error
    assert "\n" not in r.error.strip()
