"""The calls the deadline's schedules make for a recovering spot instance, checked against botocore's EC2 model (the
universal target names an operation, the input is its parameters) and run on moto's EC2 (127.0.0.1)."""

from __future__ import annotations

import json

import botocore.session
import pytest
from botocore.validate import ParamValidator

from tests.support.inventory import MotoAws
from tests.support.specs import experiment, render_experiment

SCHEDULE = "aws:scheduler/schedule:Schedule"


@pytest.fixture(scope="module")
def schedules() -> dict:
    r = render_experiment(experiment())
    assert r.error is None, r.error
    return {s.name: s.inputs["target"] for s in r.of_type(SCHEDULE)}


def operation(target_arn: str):
    """``arn:aws:scheduler:::aws-sdk:ec2:cancelSpotInstanceRequests`` -> botocore's CancelSpotInstanceRequests."""
    service, action = target_arn.split(":")[-2:]
    assert service == "ec2"
    model = botocore.session.get_session().get_service_model("ec2")
    return model.operation_model(action[0].upper() + action[1:])


@pytest.mark.parametrize("name", ["exp1-spot-cancel", "exp1-deadline"])
def test_each_schedule_input_is_its_operations_parameters(schedules: dict, name: str) -> None:
    target = schedules[name]
    op = operation(target["arn"])
    report = ParamValidator().validate(json.loads(target["input"]), op.input_shape)
    assert not report.has_errors(), report.generate_report()
    assert op.name == {"exp1-spot-cancel": "CancelSpotInstanceRequests", "exp1-deadline": "TerminateInstances"}[name]


def test_the_cancel_input_cancels_a_persistent_request_on_moto(schedules: dict, aws: MotoAws) -> None:
    ec2 = aws.clients().client("ec2", "us-east-1")
    request = ec2.request_spot_instances(
        Type="persistent", InstanceInterruptionBehavior="stop", InstanceCount=1,
        LaunchSpecification={"ImageId": "ami-12c6146b", "InstanceType": "g5.xlarge"},
    )["SpotInstanceRequests"][0]["SpotInstanceRequestId"]
    params = json.loads(schedules["exp1-spot-cancel"]["input"])
    params["SpotInstanceRequestIds"] = [request]  # the rendered id is the mock's; the shape is the schedule's
    answer = ec2.cancel_spot_instance_requests(**params)
    assert [(c["SpotInstanceRequestId"], c["State"]) for c in answer["CancelledSpotInstanceRequests"]] == [
        (request, "cancelled")]
