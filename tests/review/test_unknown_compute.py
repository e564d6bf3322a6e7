"""Programs that create (or may create) GPU compute the offline review cannot see: a compute form's instance type
unknown at preview (an output of a resource not created yet, a stack reference's output), Elastic Beanstalk's
name/value settings, inputs the SDK cannot send, a registration from a thread. None passes; a partial names the
program's file:line in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.review import report
from gpulease.review.engine import review
from tests.support.clock import FIXED_NOW

TAGS = '''tags = {
    "gpulease:owner": "li@example.com", "gpulease:project": "p", "gpulease:experiment": "p",
    "gpulease:cost-center": "research", "gpulease:budget-usd": "900", "gpulease:expires-at": "2026-12-01T16:00:00Z",
    "gpulease:max-runtime-hours": "8", "gpulease:checkpoint-uri": "none", "gpulease:managed-by": "gpulease",
}
'''
NC = ('k8s.apiextensions.CustomResource("nc", api_version="karpenter.k8s.aws/v1", kind="EC2NodeClass", '
      'metadata={"name": "default"}, spec={"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "R"})\n')
SPEC = ('{"template": {"spec": {"requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In", '
        '"values": ["p4d.24xlarge"]}], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", '
        '"name": "default"}}}, "limits": {"cpu": "1000"}}')

PROGRAMS = {
    # A Karpenter NodePool whose spec depends on an output unknown at preview: spec reaches the pack as null.
    "karpenter-spec-unknown": "import pulumi_kubernetes as k8s\nns = k8s.core.v1.Namespace('ns')\n" + NC
    + f"k8s.apiextensions.CustomResource('np', api_version='karpenter.sh/v1', kind='NodePool', "
      f"spec=ns.metadata.name.apply(lambda _: {SPEC}))\n",
    # An instance whose type comes from another stack: budget-unpriced advisory only.
    "instance-type-from-stack-reference": "import pulumi, pulumi_aws as aws\n" + TAGS
    + "ref = pulumi.StackReference('acme/infra/prod')\n"
      "aws.ec2.Instance('gpu', instance_type=ref.get_output('gpu_type'), ami='ami-0123456789abcdef0', tags=tags,\n"
      "    metadata_options={'http_tokens': 'required'}, root_block_device={'encrypted': True})\n",
    # Elastic Beanstalk names its instance type as a namespace/name/value setting (either namespace).
    "beanstalk-gpu-setting": "import pulumi_aws as aws\n" + TAGS
    + "aws.elasticbeanstalk.Environment('env', application='app', tags=tags,\n"
      "    solution_stack_name='64bit Amazon Linux 2023 v4.0.0 running Python 3.11',\n"
      "    settings=[{'namespace': 'aws:autoscaling:launchconfiguration', 'name': 'InstanceType', 'value': 'p3.2xlarge'}])\n",
    "beanstalk-gpu-instance-types": "import pulumi_aws as aws\n" + TAGS
    + "aws.elasticbeanstalk.ConfigurationTemplate('tpl', application='app',\n"
      "    solution_stack_name='64bit Amazon Linux 2023 v4.0.0 running Python 3.11',\n"
      "    settings=[{'namespace': 'aws:ec2:instances', 'name': 'InstanceTypes', 'value': 't3.large,g5.xlarge'}])\n",
    # SageMaker production variants unknown at preview.
    "sagemaker-variants-unknown": "import pulumi_aws as aws, pulumi_kubernetes as k8s\n" + TAGS
    + "ns = k8s.core.v1.Namespace('ns')\n"
      "cfg = aws.sagemaker.EndpointConfiguration('cfg', tags=tags, production_variants=ns.metadata.name.apply(\n"
      "    lambda _: [{'variant_name': 'v', 'model_name': 'm', 'instance_type': 'ml.p4d.24xlarge', 'initial_instance_count': 2}]))\n"
      "aws.sagemaker.Endpoint('ep', endpoint_config_name=cfg.name, tags=tags)\n",
}


def _write(tmp: Path, name: str, body: str) -> Path:
    d = tmp / name
    d.mkdir()
    (d / "Pulumi.yaml").write_text(f"name: {name}\nruntime: python\n")
    (d / "Pulumi.test.yaml").write_text("config:\n  aws:region: us-east-1\n")
    (d / "__main__.py").write_text(body)
    return d


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_possible_gpu_never_passes(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, PROGRAMS[name]))], now=FIXED_NOW)
    stack = report.to_json([r])["stacks"][0]
    assert r.exit_code != 0, (stack["status"], [v["policy"] for v in stack["violations"]])


UNKNOWN_FIELDS = {
    "karpenter-spec-unknown": ("__main__.py:4: ", "spec of kubernetes:karpenter.sh/v1:NodePool 'np'",
                               "an output of kubernetes:core/v1:Namespace 'ns'"),
    "instance-type-from-stack-reference": ("__main__.py:8: ", "instanceType of aws:ec2/instance:Instance 'gpu'",
                                           "stack reference 'acme/infra/prod'"),
    "sagemaker-variants-unknown": ("__main__.py:8: ", "productionVariants of aws:sagemaker/endpointConfiguration"
                                   ":EndpointConfiguration 'cfg'", "an output of kubernetes:core/v1:Namespace 'ns'"),
}


@pytest.mark.parametrize("name", sorted(UNKNOWN_FIELDS))
def test_unknown_compute_field_is_partial_naming_field_line_and_why(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, PROGRAMS[name]))], now=FIXED_NOW)
    stack = report.to_json([r])["stacks"][0]
    site, field, why = UNKNOWN_FIELDS[name]
    assert (r.exit_code, stack["status"]) == (3, "partial"), stack["error"]
    assert f"{site}GPU compute may be here: {field} is unknown offline (" in stack["error"], stack["error"]
    assert why in stack["error"] and "\n" not in stack["error"], stack["error"]


def test_known_instance_type_is_not_partial(tmp_path: Path) -> None:
    body = PROGRAMS["instance-type-from-stack-reference"].replace("ref.get_output('gpu_type')", "'p4d.24xlarge'")
    [r] = review([str(_write(tmp_path, "known", body))], now=FIXED_NOW)
    assert report.to_json([r])["stacks"][0]["error"] is None


def test_eks_unknown_instance_type_is_not_the_default(tmp_path: Path) -> None:
    body = ("import pulumi, pulumi_eks as eks\nref = pulumi.StackReference('acme/infra/prod')\n"
            "eks.Cluster('c', instance_type=ref.get_output('t'), desired_capacity=2, min_size=1, max_size=4)\n")
    [r] = review([str(_write(tmp_path, "eks-unknown-type", body))], now=FIXED_NOW)
    stack = report.to_json([r])["stacks"][0]
    lt = [x for x in stack["resources"] if x["type"] == "aws:ec2/launchTemplate:LaunchTemplate"]
    assert lt and all(x["inputs"].get("instanceType") != "t3.medium" for x in lt), lt
    assert r.exit_code == 3, stack["error"]
    assert ("__main__.py:3: GPU compute may be here: instanceType of aws:ec2/launchTemplate:LaunchTemplate "
            "'c-launchTemplate' is unknown offline") in stack["error"], stack["error"]


def test_eks_absent_instance_type_takes_the_default(tmp_path: Path) -> None:
    body = "import pulumi_eks as eks\neks.Cluster('c', desired_capacity=2, min_size=1, max_size=4)\n"
    [r] = review([str(_write(tmp_path, "eks-default-type", body))], now=FIXED_NOW)
    stack = report.to_json([r])["stacks"][0]
    lt = [x for x in stack["resources"] if x["type"] == "aws:ec2/launchTemplate:LaunchTemplate"]
    assert [x["inputs"].get("instanceType") for x in lt] == ["t3.medium"]
    assert "unknown offline" not in (stack["error"] or "")


@pytest.mark.parametrize("value", ["decimal.Decimal('1e400')", "fractions.Fraction(1, 3)", "fractions.Fraction(10**400)",
                                   "type('N', (), {'__int__': lambda s: 10**400, '__index__': lambda s: 10**400})()"])
def test_unsendable_value_names_the_line(tmp_path: Path, value: str) -> None:
    body = ("import decimal, fractions, pulumi_aws as aws\naws.s3.Bucket('b')\n"
            f"aws.ec2.Instance('gpu', instance_type='p4d.24xlarge', ami='ami-0123456789abcdef0', "
            f"root_block_device={{'volume_size': {value}}})\n")
    [r] = review([str(_write(tmp_path, "unsendable", body))], now=FIXED_NOW)
    stack = report.to_json([r])["stacks"][0]
    assert r.exit_code == 3
    error = stack["error"] or ""
    assert error.startswith("__main__.py:3: aws:ec2/instance:Instance 'gpu': an input cannot be sent to the engine ("), error
    assert "\n" not in error and "0" * 80 not in error, error


def test_custom_timeout_not_a_duration_names_the_line(tmp_path: Path) -> None:
    body = ("import pulumi, pulumi_aws as aws\naws.s3.Bucket('b')\n"
            "aws.ec2.Instance('gpu', instance_type='p4d.24xlarge', ami='ami-0123456789abcdef0',\n"
            "    opts=pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create=10**400)))\n")
    [r] = review([str(_write(tmp_path, "timeouts", body))], now=FIXED_NOW)
    error = report.to_json([r])["stacks"][0]["error"] or ""
    assert r.exit_code == 3
    assert error.startswith("__main__.py:3: aws:ec2/instance:Instance 'gpu': an input cannot be sent"), error
    assert "\n" not in error and len(error) < 300, error


def test_registration_from_a_thread_is_partial_without_a_traceback(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    body = ("import threading, pulumi_aws as aws\naws.s3.Bucket('b')\n\n\ndef mk():\n"
            "    aws.ec2.Instance('gpu', instance_type='p4d.24xlarge', ami='ami-0123456789abcdef0')\n\n\n"
            "t = threading.Thread(target=mk)\nt.start()\nt.join()\n")
    [r] = review([str(_write(tmp_path, "thread", body))], now=FIXED_NOW)
    error = report.to_json([r])["stacks"][0]["error"] or ""
    assert r.exit_code == 3, error
    assert error.startswith("__main__.py:6: a thread the program started failed ("), error
    assert "Traceback" not in capfd.readouterr().err
