"""What the pack cannot see is reported, never passed: template intrinsics, templates it cannot read, types picked
by attributes, compute a schedule or a command launches, scheduled resizes, inputs too deep to scan."""

from __future__ import annotations

import json

import pytest

from gpulease.core import resources as rt
from gpulease.core.compute.cloudformation import STACK
from gpulease.core.cost import estimate_resources
from tests.support.policy import analyze, found, res, tags

GPU_RULES = ("max-runtime", "unseen-compute-types", "unjudged-gpu-compute")


def _instance(instance_type: object) -> dict:
    return {"Type": "AWS::EC2::Instance", "Properties": {"ImageId": "ami-1", "InstanceType": instance_type}}


def _template(**doc: object) -> str:
    return json.dumps(doc)


def _hits(*resources, config=None) -> list[tuple[str, str | None, str]]:
    return [(p, n, d) for p, _, n, d in found(analyze(*resources, config=config)) if p in GPU_RULES]


@pytest.mark.parametrize(("doc", "types"), [
    ({"Conditions": {"Prod": {"Fn::Equals": ["a", "a"]}},
      "Resources": {"G": _instance({"Fn::If": ["Prod", "p4d.24xlarge", "t3.micro"]})}}, "p4d.24xlarge"),
    ({"Mappings": {"Size": {"big": {"Type": "p4d.24xlarge"}}},
      "Resources": {"G": _instance({"Fn::FindInMap": ["Size", "big", "Type"]})}}, "p4d.24xlarge"),
    ({"Mappings": {"Size": {"a": {"T": "t3.micro"}, "b": {"T": "p5.48xlarge"}}},
      "Resources": {"G": _instance({"Fn::FindInMap": ["Size", {"Ref": "AWS::Region"}, "T"]})}}, "p5.48xlarge"),
    ({"Parameters": {"T": {"Type": "String", "AllowedValues": ["p4d.24xlarge", "p5.48xlarge"]}},
      "Resources": {"G": _instance({"Ref": "T"})}}, "p4d.24xlarge, p5.48xlarge"),
    ({"Resources": {"G": _instance({"Fn::Select": [0, ["p4d.24xlarge"]]})}}, "p4d.24xlarge"),
    ({"Resources": {"G": _instance({"Fn::Sub": "p4d.24xlarge"})}}, "p4d.24xlarge"),
    ({"Resources": {"G": _instance({"Fn::Join": [".", ["p4d", "24xlarge"]]})}}, "p4d.24xlarge"),
])
def test_an_intrinsic_whose_values_the_template_lists_is_judged_by_every_value(doc, types):
    hits = _hits(res(STACK, "s", {"templateBody": _template(**doc)}))
    runtime = [d for p, _, d in hits if p == "max-runtime"]
    assert runtime and runtime[0].startswith(f"Instance 's/G' ({types}) has no gpulease:expires-at tag"), hits


@pytest.mark.parametrize("body", [
    _template(Resources={"G": _instance({"Fn::GetAtt": ["Other", "Type"]})}),
    _template(Parameters={"T": {"Type": "String"}}, Resources={"G": _instance({"Ref": "T"})}),
    _template(Resources={"G": _instance({"Fn::Sub": "p4d.${Size}"})}),
    "Resources:\n  G:\n    Type: AWS::EC2::Instance\n    Properties:\n      InstanceType: !Ref\n      ImageId: ami-1\n",
])
def test_an_intrinsic_the_pack_cannot_resolve_is_compute_it_cannot_judge(body):
    hits = _hits(res(STACK, "s", {"templateBody": body}))
    assert [(p, n) for p, n, _ in hits] == [("unseen-compute-types", "s")], hits
    assert ("Instance 's/G' (EC2 instance): its instance type is a CloudFormation intrinsic function the pack cannot "
            "resolve") in hits[0][2]


def test_a_cpu_type_chosen_by_an_intrinsic_passes():
    doc = {"Conditions": {"P": {"Fn::Equals": ["a", "b"]}},
           "Resources": {"G": _instance({"Fn::If": ["P", "t3.large", "m5.large"]})}}
    assert _hits(res(STACK, "s", {"templateBody": _template(**doc)})) == []


def test_a_gpu_type_an_intrinsic_lists_for_a_resource_no_form_reads_is_unjudged():
    body = _template(Conditions={"P": {"Fn::Equals": ["a", "a"]}}, Resources={"E": {
        "Type": "AWS::EMR::Cluster", "Properties": {"InstanceType": {"Fn::If": ["P", "g5.12xlarge", "m5.large"]}}}})
    ((policy, _, detail),) = _hits(res(STACK, "s", {"templateBody": body}))
    assert policy == "unjudged-gpu-compute" and "creates E (AWS::EMR::Cluster), which asks for g5.12xlarge" in detail


@pytest.mark.parametrize(("body", "reason"), [
    (_template(Resources={"C": {"Type": "AWS::CloudFormation::Stack", "Properties": {
        "TemplateURL": "https://s3.amazonaws.com/b/gpu.yaml"}}}),
     "its template's resource 'C' is a nested stack (AWS::CloudFormation::Stack) whose template lives elsewhere"),
    (_template(Transform="AWS::Serverless-2016-10-31", Resources={"Q": {"Type": "AWS::SQS::Queue"}}),
     "its template uses Transform 'AWS::Serverless-2016-10-31', a macro that rewrites the template"),
    (_template(Resources={"I": {"Type": "AWS::EC2::Instance", "Properties": {
        "Fn::Transform": {"Name": "AWS::Include", "Parameters": {"Location": "s3://b/p.yaml"}}}}}),
     "its template's resource 'I' has Properties that are not a plain mapping"),
    (_template(Resources={"I": {"Type": "AWS::SQS::Queue", "Properties": {"Ref": "AWS::NoValue"}}}),
     "its template's resource 'I' has Properties that are not a plain mapping"),
    (_template(Resources={"I": {"Type": "AWS::EC2::Instance", "Properties": {"Tags": [
        {"Fn::Transform": {"Name": "M"}}]}}}),
     "its template's resource 'I' uses Fn::Transform"),
    ('{"Resources": {"G": {"Type": "AWS::EC2::Instance", "Properties": {"InstanceType": "p4d.24xlarge", '
     '"InstanceType": "t3.micro"}}}}', "its templateBody is ambiguous: the key 'InstanceType' is given twice"),
    ("Resources:\n  G:\n    Type: AWS::EC2::Instance\n    Properties:\n      InstanceType: p4d.24xlarge\n"
     "      InstanceType: t3.micro\n", "its templateBody is ambiguous: the key 'InstanceType' is given twice"),
    (json.dumps({"Resources": {"G": _instance("p4d.24xlarge")}, "Metadata": {"pad": "é" * 30_000}},
                ensure_ascii=False), "its templateBody is 60,"),
])
def test_a_template_the_pack_cannot_read_is_reported_without_a_traceback(body, reason):
    hits = _hits(res(STACK, "cfn", {"templateBody": body}))
    assert [(p, n) for p, n, _ in hits] == [("unjudged-gpu-compute", "cfn")], hits
    assert reason in hits[0][2], hits[0][2]


LT = rt.AWS_LAUNCH_TEMPLATE


def _asg(overrides: list[dict], **extra: object):
    lt_urn = res(LT, "lt", {}).urn
    return res(rt.AWS_AUTOSCALING_GROUP, "asg", property_dependencies={"mixedInstancesPolicy": [lt_urn]}, inputs={
        "minSize": 0, "maxSize": 8, "desiredCapacity": 4, "availabilityZones": ["us-east-1a"], "tags": [],
        "mixedInstancesPolicy": {"launchTemplate": {"launchTemplateSpecification": {"launchTemplateId": "lt-1"},
                                                    "overrides": overrides}}, **extra})


@pytest.mark.parametrize(("requirements", "shown"), [
    ({"vcpuCount": {"min": 4}, "acceleratorCount": {"min": 1}}, "instanceRequirements.acceleratorCount.min=1"),
    ({"vcpuCount": {"min": 4}, "acceleratorTypes": ["gpu"]}, "instanceRequirements.acceleratorTypes ['gpu']"),
    ({"vcpuCount": {"min": 4}, "acceleratorManufacturers": ["nvidia"]},
     "instanceRequirements.acceleratorManufacturers ['nvidia']"),
    ({"vcpuCount": {"min": 4}, "allowedInstanceTypes": ["p4d.*"]}, "instanceRequirements.allowedInstanceTypes ['p4d.*']"),
])
def test_types_picked_by_accelerator_attributes_are_judged_as_gpu_compute(requirements, shown):
    lt = res(LT, "lt", {"imageId": "ami-1"})
    hits = _hits(lt, _asg([{"instanceRequirements": requirements}]))
    runtime = [d for p, _, d in hits if p == "max-runtime"]
    assert runtime and runtime[0].startswith(f"Group 'asg' (autoscaling group of {shown}, up to 8)"), hits


def test_a_launch_template_or_a_fleet_asking_for_accelerators_by_attributes_is_gpu_compute():
    lt = res(LT, "lt", {"imageId": "ami-1", "instanceRequirements": {"acceleratorCount": {"min": 1}}})
    assert any(p == "max-runtime" for p, _, _ in _hits(lt, _asg([])))
    fleet = res(rt.AWS_FLEET, "f", {"type": "instant", "targetCapacitySpecification": {"totalTargetCapacity": 4},
                                    "launchTemplateConfigs": [{"overrides": [{"instanceRequirements": {
                                        "allowedInstanceTypes": ["g5*"]}}]}]})
    assert any(p == "max-runtime" and n == "f" for p, n, _ in _hits(fleet))


def test_attributes_that_do_not_exclude_accelerators_cannot_be_judged_and_max_zero_passes():
    lt = res(LT, "lt", {"imageId": "ami-1"})
    open_ = _hits(lt, _asg([{"instanceRequirements": {"vcpuCount": {"min": 4}, "memoryMib": {"min": 16384}}}]))
    assert [(p, n) for p, n, _ in open_] == [("unseen-compute-types", "asg")]
    assert "it picks instance types by attributes (instanceRequirements) without acceleratorCount.max 0" in open_[0][2]
    closed = [{"instanceRequirements": {"vcpuCount": {"min": 4}, "acceleratorCount": {"max": 0}}}]
    assert _hits(lt, _asg(closed)) == []
    cpu_only = [{"instanceRequirements": {"vcpuCount": {"min": 4}, "allowedInstanceTypes": ["m5.*", "c6i.large"]}}]
    assert _hits(lt, _asg(cpu_only)) == []


def _schedule(arn: str, request: object, name: str = "launch"):
    return res(rt.AWS_SCHEDULE, name, {"scheduleExpression": "rate(1 hour)", "flexibleTimeWindow": {"mode": "OFF"},
                                       "target": {"arn": arn, "roleArn": "arn:aws:iam::1:role/r",
                                                  "input": json.dumps(request)}})


SDK = "arn:aws:scheduler:::aws-sdk:"


def test_a_schedule_launching_gpus_is_compute_the_pack_cannot_judge_and_unpriced():
    launch = _schedule(f"{SDK}ec2:runInstances", {"InstanceType": "p5.48xlarge", "MinCount": 8, "MaxCount": 8})
    ((policy, name, detail),) = _hits(launch)
    assert (policy, name) == ("unjudged-gpu-compute", "launch")
    assert detail.startswith("compute the pack cannot judge: Schedule 'launch' (aws:scheduler/schedule:Schedule) calls "
                             "ec2:runInstances asking for p5.48xlarge at target.input.InstanceType;"), detail
    cost = estimate_resources([(rt.AWS_SCHEDULE, launch.inputs)], region="us-east-1")
    assert cost.worst_case_known is False
    assert "the instances it launches are not priced (it calls ec2:runInstances" in (cost.worst_case_reason or "")
    # Its own compute line, unpriced: the hourly figures are unknown too, never a compute-free $0.00 an hour.
    assert [(line.item, line.max_hourly_usd, line.compute) for line in cost.lines] == [
        ("instances it launches (price unknown)", None, True)]
    training = _schedule(f"{SDK}sagemaker:createTrainingJob", {"ResourceConfig": {
        "InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2}}, name="train")
    assert [n for _, n, _ in _hits(training)] == ["train"]
    hidden = _schedule(f"{SDK}ec2:runInstances", {"LaunchTemplate": {"LaunchTemplateId": "lt-1"}}, name="lt")
    assert "calls ec2:runInstances, whose input names no instance type the pack can see" in _hits(hidden)[0][2]


def test_a_schedule_raising_a_group_is_reported_and_one_stopping_it_or_launching_cpus_passes():
    raise_ = _schedule(f"{SDK}autoscaling:updateAutoScalingGroup", {"AutoScalingGroupName": "g", "MaxSize": 100})
    assert "calls autoscaling:updateAutoScalingGroup setting MaxSize=100" in _hits(raise_)[0][2]
    stop = _schedule(f"{SDK}autoscaling:updateAutoScalingGroup", {"AutoScalingGroupName": "g", "MinSize": 0,
                                                                 "MaxSize": 0, "DesiredCapacity": 0})
    cpu = _schedule(f"{SDK}ec2:runInstances", {"InstanceType": "t3.micro", "MinCount": 1, "MaxCount": 1})
    terminate = _schedule(rt.TERMINATE_TARGET, {"InstanceIds": ["i-1"]})
    assert _hits(stop, cpu, terminate) == []


def test_a_command_running_a_launching_cli_call_is_compute_the_pack_cannot_judge():
    cmd = res("command:local:Command", "launch", {
        "create": "aws ec2 run-instances --instance-type p4d.24xlarge --count 4"})
    ((policy, _, detail),) = _hits(cmd)
    assert policy == "unjudged-gpu-compute" and "runs 'run-instances'" in detail
    named = res("command:remote:Command", "r", {"create": "./train.sh", "environment": {"T": "ecs.gn7i-c8g1.2xlarge"}})
    assert "names 'ecs.gn7i-c8g1.2xlarge' in its commands" in _hits(named)[0][2]
    assert _hits(res("command:local:Command", "ok", {"create": "echo hello"})) == []


def test_gpu_types_in_json_text_inputs_and_graphics_workspaces_are_unjudged():
    definition = json.dumps({"Steps": [{"Type": "Training", "Arguments": {"ResourceConfig": {
        "InstanceType": "ml.p4d.24xlarge", "InstanceCount": 1}}}]})
    pipeline = res("aws:sagemaker/pipeline:Pipeline", "pl", {"pipelineDefinition": definition})
    ws = res("aws:workspaces/workspace:Workspace", "ws", {"workspaceProperties": {
        "computeTypeName": "GRAPHICSPRO_G4DN"}})
    hits = {n: d for _, n, d in _hits(pipeline, ws)}
    assert "asks for ml.p4d.24xlarge at pipelineDefinition(JSON).Steps[0].Arguments.ResourceConfig.InstanceType" in hits["pl"]
    assert "asks for computeTypeName=GRAPHICSPRO_G4DN at workspaceProperties.computeTypeName" in hits["ws"]


def test_inputs_nested_deeper_than_the_scan_reads_are_reported():
    deep: dict = {"instanceType": "p4d.24xlarge"}
    for _ in range(70):
        deep = {"x": deep}
    ((_, _, detail),) = _hits(res("aws:emr/cluster:Cluster", "deep", {"spec": deep}))
    assert "inputs nested more than 64 levels deep, too deep to scan" in detail


def test_a_scheduled_action_raising_a_group_sets_its_worst_case():
    group = {"minSize": 0, "maxSize": 1, "desiredCapacity": 1, "launchTemplate": {"id": "lt-1"},
             "tags": [{"key": k, "value": val, "propagateAtLaunch": True} for k, val in tags().items()]}
    lt = {"instanceType": "g5.xlarge", "imageId": "ami-1", "id": "lt-1"}
    burst = {"autoscalingGroupName": "asg", "minSize": 100, "maxSize": 100, "desiredCapacity": 100}
    stop = {"autoscalingGroupName": "asg", "minSize": 0, "maxSize": 0, "desiredCapacity": 0}
    entries = [(LT, lt), (rt.AWS_AUTOSCALING_GROUP, {**group, "name": "asg"})]
    alone = estimate_resources([*entries, (rt.AWS_AUTOSCALING_SCHEDULE, stop)], region="us-east-1")
    raised = estimate_resources([*entries, (rt.AWS_AUTOSCALING_SCHEDULE, stop), (rt.AWS_AUTOSCALING_SCHEDULE, burst)],
                                region="us-east-1")
    assert alone.worst_case_known and raised.worst_case_known
    assert raised.worst_case_usd == pytest.approx(alone.worst_case_usd * 100)
    assert "× 100 (autoscaling group max size" in raised.lines[0].item


def test_accept_lists_name_a_resource_by_urn_or_exact_urn_tail_never_by_a_bare_name():
    gpu = res(rt.AWS_INSTANCE, "gpu", {"instanceType": "p4d.24xlarge", "ami": "ami-1", "tags": tags()})
    inner = res(rt.AWS_INSTANCE, "gpu", {"instanceType": "p4d.24xlarge", "ami": "ami-1", "tags": tags()})
    inner.urn = inner.urn.replace(f"::{rt.AWS_INSTANCE}::", f"::my:index:Team${rt.AWS_INSTANCE}::")

    def stopped(entry: str, *resources) -> list[str | None]:
        config = {"max-runtime-cloud-stop": {"acceptUnbounded": [entry]}}
        return [n for p, _, n, _ in found(analyze(*resources, config=config)) if p == "max-runtime-cloud-stop"]

    assert stopped("gpu", gpu) == ["gpu"]
    assert stopped(gpu.urn, gpu) == []
    assert stopped(f"{rt.AWS_INSTANCE}::gpu", gpu) == []
    assert stopped(f"{rt.AWS_INSTANCE}::gpu", inner) == ["gpu"]  # the same name under a component: not accepted
    assert stopped(f"my:index:Team${rt.AWS_INSTANCE}::gpu", inner) == []


def test_the_budget_region_is_the_default_providers_under_the_engines_name_too():
    from types import SimpleNamespace

    from policies.guardrails.budget import _region

    def on(name: str, region: str) -> SimpleNamespace:
        provider = SimpleNamespace(name=name, resource_type="pulumi:providers:aws", props={"region": region})
        return SimpleNamespace(provider=provider)

    assert _region([on("a-explicit", "ap-south-1"), on("default_6_50_0", "eu-west-1")]) == {"aws": "eu-west-1"}
    assert _region([on("a-explicit", "ap-south-1"), on("default", "eu-west-1")]) == {"aws": "eu-west-1"}
    # An explicit provider's region is its own resources' only: never the stack's region for the default provider.
    assert _region([on("a-explicit", "ap-south-1")]) == {}
