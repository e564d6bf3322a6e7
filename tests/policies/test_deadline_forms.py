"""Deadline equivalents on the group forms, resource set by resource set: a scheduled action on an autoscaling group
and a fleet's expiry must act no later than expires-at; a Batch compute environment's Scheduler call must bring
its vCPUs to zero."""

from __future__ import annotations

import json

from tests.support.policy import UNKNOWN, analyze, at, found, res, tags, urn

ASG = "aws:autoscaling/group:Group"
ASG_SCHEDULE = "aws:autoscaling/schedule:Schedule"
FLEET = "aws:ec2/fleet:Fleet"
BATCH = "aws:batch/computeEnvironment:ComputeEnvironment"
SCHEDULE = "aws:scheduler/schedule:Schedule"


def _group() -> object:
    return res(ASG, "trainers", {"maxSize": 2, "mixedInstancesPolicy": {
        "instancesDistribution": {"onDemandBaseCapacity": 0, "onDemandPercentageAboveBaseCapacity": 0},
        "launchTemplate": {"overrides": [{"instanceType": "g5.xlarge"}]}},
        "tags": [{"key": k, "value": x, "propagateAtLaunch": True} for k, x in tags().items()]})


def _stops(*resources: object) -> list[str]:
    return [h[3] for h in found(analyze(*resources), "max-runtime-cloud-stop")]


def test_a_group_scheduled_action_after_expires_at_is_late() -> None:
    def action(hours: float) -> object:
        return res(ASG_SCHEDULE, "stop", {"autoscalingGroupName": "trainers", "scheduledActionName": "stop",
                                          "minSize": 0, "maxSize": 0, "desiredCapacity": 0, "startTime": at(hours)},
                   property_dependencies={"autoscalingGroupName": [urn(ASG, "trainers")]})

    assert _stops(_group(), action(8)) == []
    (late,) = _stops(_group(), action(9))
    assert late.startswith(f"Group 'trainers': no cloud-side stop fires by its deadline (stop acts at {at(9)}, "
                           f"after gpulease:expires-at={at(8)})")


def test_a_fleet_expiry_after_expires_at_is_late() -> None:
    def fleet(hours: float) -> object:
        return res(FLEET, "fleet", {
            "type": "maintain", "validUntil": at(hours), "terminateInstancesWithExpiration": True,
            "targetCapacitySpecification": {"totalTargetCapacity": 2, "defaultTargetCapacityType": "spot"},
            "launchTemplateConfigs": [{"overrides": [{"instanceType": "g5.xlarge"}]}], "tags": tags()})

    assert _stops(fleet(8)) == []
    (late,) = _stops(fleet(10))
    assert f"validUntil={at(10)} is after gpulease:expires-at={at(8)}" in late


def _batch(**resources: object) -> object:
    return res(BATCH, "ce", {"type": "MANAGED", "tags": tags(), "computeResources": {
        "type": "SPOT", "maxVcpus": 64, "instanceTypes": ["g5.2xlarge"], **resources}})


def _batch_schedule(body: dict) -> object:
    return res(SCHEDULE, "ce-stop", {
        "scheduleExpression": f"at({at(8).removesuffix('Z')})", "flexibleTimeWindow": {"mode": "OFF"},
        "target": {"arn": "arn:aws:scheduler:::aws-sdk:batch:updateComputeEnvironment", "roleArn": "arn:x",
                   "input": json.dumps({"ComputeEnvironment": UNKNOWN, **body})}},
        property_dependencies={"target": [urn(BATCH, "ce")]})


def test_a_batch_environment_stops_only_at_zero_vcpus() -> None:
    assert _stops(_batch(), _batch_schedule({"ComputeResources": {"MaxvCpus": 0}})) == []
    assert _stops(_batch(), _batch_schedule({"State": "DISABLED", "ComputeResources": {"MinvCpus": 0}})) == []
    (late,) = _stops(_batch(), _batch_schedule({"ComputeResources": {"MaxvCpus": 8}}))
    assert late == ("ComputeEnvironment 'ce': no cloud-side stop fires by its deadline (ce-stop: "
                    "ComputeResources.MaxvCpus=8 (accepted: 0); ce-stop: State=None (accepted: 'DISABLED'), "
                    "ComputeResources.MinvCpus=None (accepted: 0))")
    (none,) = _stops(_batch())
    assert none.startswith("ComputeEnvironment 'ce' (AWS Batch compute environment of g5.2xlarge, up to 8) has no "
                           "cloud-side stop at its deadline; accepted: a one-time at(...) EventBridge Scheduler "
                           "schedule calling batch:updateComputeEnvironment")
