"""A CloudFormation stack's template is read like the program itself: the compute forms among its resources are
judged by the same rules (findings on the stack), other GPU resources of it are unjudged compute, and a template
the pack cannot read is a finding, never a pass."""

from __future__ import annotations

import json

import pytest

from gpulease.core.compute import UNKNOWN
from gpulease.core.compute.cloudformation import STACK, Unreadable, camel, template_resources, token_of
from tests.support.policy import analyze, found, res

ASG_JSON = json.dumps({"Resources": {
    "Template": {"Type": "AWS::EC2::LaunchTemplate", "Properties": {"LaunchTemplateData": {
        "InstanceType": "p4d.24xlarge", "MetadataOptions": {"HttpTokens": "required"}}}},
    "Group": {"Type": "AWS::AutoScaling::AutoScalingGroup", "Properties": {
        "MinSize": "0", "MaxSize": "4", "DesiredCapacity": "2",
        "LaunchTemplate": {"LaunchTemplateId": {"Ref": "Template"},
                           "Version": {"Fn::GetAtt": ["Template", "LatestVersionNumber"]}}}},
}})
NODEGROUP_YAML = """
Parameters:
  NodeType:
    Type: String
    Default: m5.large
Resources:
  Nodes:
    Type: AWS::EKS::Nodegroup
    Properties:
      ClusterName: !Ref Cluster
      NodeRole: !GetAtt Role.Arn
      Subnets: !Split [",", !Sub "${SubnetIds}"]
      InstanceTypes: [!Ref NodeType]
      ScalingConfig: {MinSize: 1, MaxSize: 8, DesiredSize: 2}
"""


def _stack(name: str, **inputs: object):
    return res(STACK, name, inputs)


def _policies(*resources) -> set[tuple[str, str | None]]:
    return {(p, n) for p, _, n, _ in found(analyze(*resources)) if p != "budget-tags"}


def test_an_autoscaling_group_and_its_launch_template_in_a_json_template_are_judged_on_the_stack():
    hits = found(analyze(_stack("gpus", templateBody=ASG_JSON)))
    spot = [d for p, _, n, d in hits if p == "spot-only-with-checkpointing" and n == "gpus"]
    assert spot == ["AutoScalingGroup 'gpus/Group' (autoscaling group of p4d.24xlarge, up to 4) is on-demand; "
                    "accepted: mixed_instances_policy.instances_distribution with on_demand_base_capacity=0 and "
                    "on_demand_percentage_above_base_capacity=0, or a launch template with instance_market_options spot, "
                    "or a gpulease:on-demand-reason tag saying why it "
                    "cannot run on spot"]
    assert {("max-runtime", "gpus"), ("max-runtime-cloud-stop", "gpus")} <= _policies(_stack("gpus", templateBody=ASG_JSON))
    assert [p for p, _, _, _ in hits if p == "unjudged-gpu-compute"] == []


def test_a_yaml_template_with_short_tags_reads_parameters_from_the_stack_then_the_defaults():
    given = _stack("nodes", templateBody=NODEGROUP_YAML, parameters={"NodeType": "g5.12xlarge"})
    spot = [d for p, _, n, d in found(analyze(given)) if p == "spot-only-with-checkpointing"]
    assert [d.split(" is ")[0] for d in spot] == ["Nodegroup 'nodes/Nodes' (EKS node group of g5.12xlarge, up to 8)"]
    # Without the parameter, its default (a CPU type) is what the stack runs: no GPU finding.
    assert [p for p, _, _, _ in found(analyze(_stack("nodes", templateBody=NODEGROUP_YAML)))
            if p in ("spot-only-with-checkpointing", "max-runtime", "unjudged-gpu-compute")] == []


def test_a_batch_environment_in_a_template_is_judged_like_one_in_the_program():
    body = json.dumps({"Resources": {"Env": {"Type": "AWS::Batch::ComputeEnvironment", "Properties": {
        "Type": "MANAGED", "ComputeResources": {"Type": "EC2", "MaxvCpus": 192, "InstanceTypes": ["p4d.24xlarge"],
                                                "Subnets": ["subnet-1"], "InstanceRole": "role"}}}}})
    assert ("max-runtime", "batch") in _policies(_stack("batch", templateBody=body))


@pytest.mark.parametrize(("inputs", "reason"), [
    ({"templateUrl": "https://s3.amazonaws.com/b/nodes.yaml"},
     "its template is at templateUrl 'https://s3.amazonaws.com/b/nodes.yaml', which an offline review cannot read"),
    ({"templateBody": "Resources: [unclosed"}, "its templateBody is neither JSON nor YAML"),
    ({"templateBody": "just text"}, "its templateBody has no Resources mapping"),
    ({"templateBody": "Resources:\n  X: {Properties: {}}\n"}, "its template's resource 'X' has no Type"),
    ({"templateBody": "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefg", "bcdefgh", strict=True)) + "Resources: {X: {Type: AWS::S3::Bucket, Properties: "
        "{Tags: *h}}}\n"}, "its template expands to more than 200,000 values (YAML aliases)"),
    ({}, "it has neither templateBody nor templateUrl"),
])
def test_a_template_the_pack_cannot_read_is_gpu_compute_it_cannot_judge(inputs, reason):
    ((level, name, detail),) = [(lv, n, d) for p, lv, n, d in found(analyze(_stack("cfn", **inputs)))
                                if p == "unjudged-gpu-compute"]
    assert (level, name) == ("mandatory", "cfn")
    assert detail.startswith(f"GPU compute the pack cannot judge: Stack 'cfn' ({STACK}) may create instances, but "
                             f"{reason}"), detail


def test_a_gpu_resource_of_a_template_no_form_reads_is_unjudged_and_cpu_templates_pass():
    body = json.dumps({"Resources": {"Emr": {"Type": "AWS::EMR::Cluster", "Properties": {"Instances": {
        "CoreInstanceGroup": {"InstanceType": "g5.12xlarge", "InstanceCount": 4}}}}}})
    (detail,) = [d for p, _, _, d in found(analyze(_stack("emr", templateBody=body))) if p == "unjudged-gpu-compute"]
    assert detail.startswith(f"GPU compute the pack cannot judge: Stack 'emr' ({STACK}) creates Emr "
                             "(AWS::EMR::Cluster), which asks for g5.12xlarge at instances.coreInstanceGroup.instanceType;")
    cpu = json.dumps({"Resources": {"B": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": "x"}}}})
    assert [p for p, _, _, _ in found(analyze(_stack("cpu", templateBody=cpu))) if p == "unjudged-gpu-compute"] == []


def test_the_reader_spells_properties_and_types_as_pulumi_aws_native_does():
    assert [camel(n) for n in ("VPCZoneIdentifier", "DesiredCapacity", "HttpTokens", "MaxvCpus", "ID", "A")] == [
        "vpcZoneIdentifier", "desiredCapacity", "httpTokens", "maxvCpus", "id", "a"]
    assert [token_of(t) for t in ("AWS::EC2::Instance", "AWS::EKS::Nodegroup", "Custom::Thing", "AWS::X")] == [
        "aws-native:ec2:Instance", "aws-native:eks:Nodegroup", None, None]
    (nodes,) = template_resources({"templateBody": NODEGROUP_YAML}, "urn:x")
    assert (nodes.props["instanceTypes"], nodes.props["clusterName"], nodes.props["subnets"]) == (
        ["m5.large"], UNKNOWN, UNKNOWN)
    assert template_resources({"templateBody": UNKNOWN}, "urn:x") is None
    assert isinstance(template_resources({"templateBody": "x" * 1_000_001}, "urn:x"), Unreadable)


LAUNCH_TEMPLATE_JSON = json.dumps({"Resources": {
    "Open": {"Type": "AWS::EC2::LaunchTemplate", "Properties": {"LaunchTemplateData": {
        "InstanceType": "p4d.24xlarge", "MetadataOptions": {"HttpTokens": "optional", "HttpPutResponseHopLimit": 3},
        "BlockDeviceMappings": [{"DeviceName": "/dev/xvda", "Ebs": {"VolumeSize": 200, "Encrypted": False}}]}}},
    "Unset": {"Type": "AWS::EC2::LaunchTemplate", "Properties": {"LaunchTemplateData": {
        "InstanceType": "g5.xlarge"}}},
    "Closed": {"Type": "AWS::EC2::LaunchTemplate", "Properties": {"LaunchTemplateData": {
        "InstanceType": "g5.xlarge", "MetadataOptions": {"HttpTokens": "required"},
        "BlockDeviceMappings": [{"DeviceName": "/dev/xvda", "Ebs": {"VolumeSize": 100, "Encrypted": True}}]}}},
}})


def test_launch_templates_in_a_template_are_judged_for_metadata_and_encryption_like_the_programs_own():
    hits = found(analyze(_stack("nodes", templateBody=LAUNCH_TEMPLATE_JSON)))
    metadata = sorted(d for p, _, n, d in hits if p == "imdsv2-required" and n == "nodes")
    assert metadata == [
        "LaunchTemplate 'nodes/Open' allows IMDSv1 "
        "(launchTemplateData.metadataOptions.httpTokens=optional); accepted: metadata_options={'http_tokens': 'required'}",
        "LaunchTemplate 'nodes/Open': launchTemplateData.metadataOptions.httpPutResponseHopLimit=3 "
        "lets more than 2 network hops reach the instance credentials",
        "LaunchTemplate 'nodes/Unset' leaves launchTemplateData.metadataOptions.httpTokens unset: "
        + metadata[2].split("unset: ", 1)[1],
    ]
    assert "accepted: metadata_options={'http_tokens': 'required'}" in metadata[2]
    storage = sorted(d for p, _, n, d in hits if p == "encrypted-storage" and n == "nodes")
    assert storage == [
        "LaunchTemplate 'nodes/Open': blockDeviceMappings[0] (/dev/xvda) "
        "is not encrypted",
        "LaunchTemplate 'nodes/Unset': no blockDeviceMappings: the image's "
        "own mappings decide whether its volumes are encrypted, which a preview cannot see; accepted: "
        "block_device_mappings with ebs encrypted=true for the root device",
    ]
