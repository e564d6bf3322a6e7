"""Possible GPU compute behind a preview-unknown value that still exits 0,
and unknown counts priced as one instance."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.review import report
from gpulease.review.engine import review
from tests.review.test_unknown_compute import TAGS, _write
from tests.support.clock import FIXED_NOW

HEAD = ("import pulumi, pulumi_aws as aws, pulumi_kubernetes as k8s, pulumi_alicloud as ali\n" + TAGS
        + "U = pulumi.StackReference('acme/infra/prod').get_output('x')\nMD = {'http_tokens': 'required'}\n")
LT = ("lt = aws.ec2.LaunchTemplate('lt', tags=tags, metadata_options=MD,\n"
      "    block_device_mappings=[{'device_name': '/dev/xvda', 'ebs': {'encrypted': 'true'}}])\n")

PROGRAMS = {
    # one unknown element inside a list-valued instance-types path (no '*' step): read_all misses it
    "eks-nodegroup-instance-types-element": LT
    + "aws.eks.NodeGroup('ng', cluster_name='c', node_role_arn='arn:aws:iam::123456789012:role/r', subnet_ids=['s'],\n"
      "    tags=tags, launch_template={'id': lt.id, 'version': '1'}, instance_types=[U], capacity_type='SPOT',\n"
      "    scaling_config={'desired_size': 1, 'min_size': 0, 'max_size': 2})\n",
    # the resource is created inside an apply of an unknown output: never registered, "0 resources, $0.00"
    "resource-inside-apply": "U.apply(lambda _: aws.ec2.Instance('gpu', instance_type='p4d.24xlarge',\n"
      "    ami='ami-0123456789abcdef0', tags=tags, metadata_options=MD, root_block_device={'encrypted': True}))\n",
    # types outside the registry: judged when known (unjudged-gpu-compute), pass when unknown
    "emr-instance-group-unknown": "aws.emr.InstanceGroup('g', cluster_id='j-1', instance_type=U, instance_count=4)\n",
    "emr-cluster-fleet-unknown": "aws.emr.Cluster('c', release_label='emr-6.10.0', service_role='r', tags=tags,\n"
      "    ec2_attributes={'instance_profile': 'p', 'subnet_id': 's'},\n"
      "    master_instance_fleet={'instance_type_configs': [{'instance_type': 'm5.xlarge'}], 'target_on_demand_capacity': 1},\n"
      "    core_instance_fleet={'instance_type_configs': [{'instance_type': U}], 'target_on_demand_capacity': 4})\n",
    "k8s-deployment-gpu-limit-unknown": "k8s.apps.v1.Deployment('d', spec={'replicas': 2, 'selector': {'match_labels': {'a': 'x'}},\n"
      "    'template': {'metadata': {'labels': {'a': 'x'}}, 'spec': {'containers': [{'name': 'c', 'image': 'x',\n"
      "    'resources': {'limits': {'nvidia.com/gpu': U}}}]}}})\n",
    "k8s-job-instance-type-selector-unknown": "k8s.batch.v1.Job('j', spec={'template': {'spec': {'restart_policy': 'Never',\n"
      "    'node_selector': {'node.kubernetes.io/instance-type': U}, 'containers': [{'name': 'c', 'image': 'x'}]}}})\n",
    "alicloud-apg-unknown": "ali.ecs.AutoProvisioningGroup('apg', launch_template_id='lt-1', total_target_capacity='4',\n"
      "    launch_template_configs=[{'instance_type': U, 'max_price': '10', 'vswitch_id': 'v', 'weighted_capacity': '1'}])\n",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_possible_gpu_never_exits_0(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + PROGRAMS[name]))], now=FIXED_NOW)
    assert r.exit_code != 0, report.to_json([r])["stacks"][0]["status"]


def test_unknown_max_size_is_not_one_instance(tmp_path: Path) -> None:
    body = HEAD + LT.replace("tags=tags,", "tags=tags, instance_type='p4d.24xlarge', image_id='ami-0123456789abcdef0',") + (
        "aws.autoscaling.Group('g', min_size=0, max_size=U, availability_zones=['us-east-1a'],\n"
        "    launch_template={'id': lt.id})\n")
    [r] = review([str(_write(tmp_path, "asg-max-unknown", body))], now=FIXED_NOW)
    [exp] = report.to_json([r])["stacks"][0]["cost"]["experiments"]
    assert exp["worstCaseKnown"] is False, exp
    assert "size unknown offline" in exp["worstCaseReason"], exp


KNOWN_NOT_GPU = {
    # an unknown input that decides no GPU (a name, a cluster id) on a type outside the registry is no finding
    "emr-instance-group-unknown-name": "aws.emr.InstanceGroup('g', cluster_id=U, name=U, instance_type='m5.xlarge',\n"
      "    instance_count=4)\n",
    "k8s-job-unknown-image": "k8s.batch.v1.Job('j', spec={'template': {'spec': {'restart_policy': 'Never',\n"
      "    'node_selector': {'node.kubernetes.io/instance-type': 'm5.xlarge'}, 'containers': [{'name': 'c', 'image': U}]}}})\n",
}


@pytest.mark.parametrize("name", sorted(KNOWN_NOT_GPU))
def test_unknown_input_deciding_no_gpu_is_not_partial(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + KNOWN_NOT_GPU[name]))], now=FIXED_NOW)
    stack = report.to_json([r])["stacks"][0]
    assert "GPU compute may be here" not in (stack.get("error") or ""), stack.get("error")
    assert r.exit_code == 0, stack["status"]


RAN = "was registered by an apply run offline with an unknown value (at __main__.py:{line})"
SKIPPED = "an apply on a value unknown offline was not run (at __main__.py:{line})"
APPLIES = {
    # a callback that only formats a string: run offline, it registers nothing
    "apply-formatting": ("pulumi.export('arn', U.apply(lambda v: f'arn:aws:s3:::{v}'.upper()))\n", None),
    # a helper of the program that registers a resource, called from the callback: run offline, it is seen
    "apply-helper-registers": ("def make(_):\n    return aws.ec2.Instance('gpu', instance_type='p4d.24xlarge',\n"
                               "        ami='ami-0123456789abcdef0', tags=tags, metadata_options=MD,\n"
                               "        root_block_device={'encrypted': True})\n"
                               "U.apply(lambda v: make(v))\n", RAN),
    # an apply nested in one run offline is run offline in turn
    "nested-apply-registers": ("def make(_):\n    return aws.ec2.Instance('gpu', instance_type='p4d.24xlarge')\n"
                               "U.apply(lambda v: U.apply(make))\n", (RAN, SKIPPED)),
    # a callback that raises on the marker falls back to the static rule: it may register, so partial
    "raises-may-register": ("U.apply(lambda v: aws.ec2.Instance('gpu', instance_type=v['type']))\n", SKIPPED),
    # ... and so does one whose program helper registers, read by the same rule
    "raises-helper-may-register": ("def make(v):\n    return aws.ec2.Instance('gpu', instance_type=v['type'])\n"
                                   "U.apply(lambda v: make(v))\n", SKIPPED),
    # a callback that raises on the marker and reads no resource class: ignored
    "raises-registers-nothing": ("pulumi.export('n', U.apply(lambda v: int(v) + 1))\n", None),
}


@pytest.mark.parametrize("name", sorted(APPLIES))
def test_skipped_apply_is_run_offline(tmp_path: Path, name: str) -> None:
    body, expected = APPLIES[name]
    [r] = review([str(_write(tmp_path, name, HEAD + body))], now=FIXED_NOW)
    stack = report.to_json([r])["stacks"][0]
    line = HEAD.count("\n") + body.count("\n")  # the .apply call is the program's last line
    error = stack.get("error") or ""
    # An outer callback that only calls an inner apply registers nothing itself: the static rule also judges it.
    kinds = expected if isinstance(expected, tuple) else (expected,)
    for kind in (RAN, SKIPPED):
        assert (kind.format(line=line) in error) is (kind in kinds), error
    assert (r.exit_code != 0) is (expected is not None), stack["status"]
    if RAN in kinds:
        assert [res.name for res in r.rendering.resources if res.type == "aws:ec2/instance:Instance"] == ["gpu"]


def test_secret_instance_type_is_priced_and_listed_as_secret(tmp_path: Path) -> None:
    body = HEAD + ("aws.ec2.Instance('gpu', instance_type=pulumi.Output.secret('p4d.24xlarge'),\n"
                   "    ami='ami-0123456789abcdef0', tags=tags, metadata_options=MD, root_block_device={'encrypted': True})\n")
    [r] = review([str(_write(tmp_path, "secret-type", body))], now=FIXED_NOW)
    stack = report.to_json([r])["stacks"][0]
    [line] = [line for line in stack["cost"]["lines"] if line["compute"]]
    assert line["hourlyUsd"] > 20 and line["item"].startswith("[secret]"), line  # priced as the type it holds
    assert "p4d.24xlarge" not in str(stack)  # and never shown (tests/review/test_secrets_never_shown.py)
    [gpu] = [res for res in r.rendering.resources if res.name == "gpu"]
    assert gpu.inputs["instanceType"] == "p4d.24xlarge", gpu.inputs  # judged as what it is, shown as [secret]
    for shown in (str(report.to_json([r])), report.markdown([r])):
        assert "4dabf18193072939515e22adb298388d" not in shown, shown  # the SDK's secret envelope never printed
    assert "[secret]" in report.markdown([r])
