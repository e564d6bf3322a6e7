"""Fail closed (issue 25): applies skipped at preview are run offline with an unknown value; possible GPU compute
hidden in them, or under unknown parents of GPU-deciding keys, never exits 0; applies that register nothing stay
judged."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.review import report
from gpulease.review.engine import review
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

GPU = "aws.ec2.Instance('gpu', instance_type='p4d.24xlarge')"
HELPERS = f"import pulumi_aws as aws\ndef make(t):\n    return {GPU}\n"

HIDDEN = {
    # skipped applies whose callbacks register resources (run offline with an unknown value)
    "importlib": "import importlib\nU.apply(lambda t: importlib.import_module('pulumi_aws').ec2.Instance('gpu', instance_type='p4d.24xlarge'))\n",
    "dunder-import": "U.apply(lambda t: __import__('pulumi_aws').ec2.Instance('gpu', instance_type='p4d.24xlarge'))\n",
    "dict-of-classes": "K = {'i': aws.ec2.Instance}\nU.apply(lambda t: K['i']('gpu', instance_type='p4d.24xlarge'))\n",
    "list-of-classes": "K = [aws.ec2.Instance]\nU.apply(lambda t: K[0]('gpu', instance_type='p4d.24xlarge'))\n",
    "namespace-of-classes": "import types as _t\nR = _t.SimpleNamespace(inst=aws.ec2.Instance)\nU.apply(lambda t: R.inst('gpu', instance_type='p4d.24xlarge'))\n",
    "default-arg": "U.apply(lambda t, mk=aws.ec2.Instance: mk('gpu', instance_type='p4d.24xlarge'))\n",
    "method-of-object": f"class B:\n    def go(self, t):\n        return {GPU}\nb = B()\nU.apply(lambda t: b.go(t))\n",
    "staticmethod-via-class": f"class B:\n    @staticmethod\n    def go(t):\n        return {GPU}\nU.apply(lambda t: B.go(t))\n",
    "project-module-attribute": "import helpers\nU.apply(lambda t: helpers.make(t))\n",
    "exec": f"U.apply(lambda t: exec(\"{GPU}\"))\n",
    # Kubernetes workloads whose GPU-deciding part is unknown as a whole (a known limit is unjudged-gpu-compute)
    "pod-limits": "k8s.core.v1.Pod('p', spec={'containers': [{'name': 'c', 'image': 'x', 'resources': {'limits': U}}]})\n",
    "pod-resources": "k8s.core.v1.Pod('p', spec={'containers': [{'name': 'c', 'image': 'x', 'resources': U}]})\n",
    "pod-containers": "k8s.core.v1.Pod('p', spec={'containers': U})\n",
    "pod-spec": "k8s.core.v1.Pod('p', spec=U)\n",
    "pod-node-selector": "k8s.core.v1.Pod('p', spec={'node_selector': U, 'containers': [{'name': 'c', 'image': 'x'}]})\n",
    "pod-gpu-product-selector": "k8s.core.v1.Pod('p', spec={'node_selector': {'nvidia.com/gpu.product': U}, 'containers': [{'name': 'c', 'image': 'x'}]})\n",
    "deployment-template": "k8s.apps.v1.Deployment('d', spec={'replicas': 2, 'selector': {'match_labels': {'a': 'x'}}, 'template': U})\n",
    # a managed node group without instance_types takes them from a launch template known only at update
    "eks-node-group-launch-template-id": "aws.eks.NodeGroup('ng', cluster_name='c', node_role_arn='arn:aws:iam::123456789012:role/r',\n"
        "    subnet_ids=['s'], tags=tags, launch_template={'id': U, 'version': '1'},\n"
        "    scaling_config={'desired_size': 1, 'min_size': 0, 'max_size': 2})\n",
    "custom-resource-spec": "k8s.apiextensions.CustomResource('x', api_version='ray.io/v1', kind='RayCluster', metadata={'name': 'r'}, spec=U)\n",
}

NO_GPU = {
    # an unknown spec of a Kubernetes kind that runs no pods is no GPU
    "service-spec": "k8s.core.v1.Service('s', spec=U)\n",
    "pod-unknown-image": "k8s.core.v1.Pod('p', spec={'containers': [{'name': 'c', 'image': U}], 'node_selector': {'team': U}})\n",
}

UNSEEN = {
    # Callbacks that register nothing for the unknown marker but whose code may register (a provider module, a
    # depth the static rule does not follow): offline they cannot be told from `if env == "prod": Instance(...)`
    # (tests/review/test_skipped_applies_branch.py), so the review says it did not see them, and is partial.
    "get-policy-document": "pulumi.export('p', U.apply(lambda a: aws.iam.get_policy_document(statements=[{'actions': ['s3:GetObject'], 'resources': [a]}]).json))\n",
    "provider-config-region": "pulumi.export('p', U.apply(lambda a: f'{a}-{aws.config.region}'))\n",
    "importlib": "import importlib\npulumi.export('p', U.apply(lambda a: importlib.import_module('json').dumps(a)))\n",
    "getattr": "pulumi.export('p', U.apply(lambda a: getattr(a, 'upper')()))\n",
    "dunder-reach": "pulumi.export('p', U.apply(lambda a: len(().__class__.__base__.__subclasses__())))\n",
    "os-module": "import os\npulumi.export('p', U.apply(lambda a: os.path.join(a, 'x')))\n",
    "resource-in-closure": "B = aws.s3.Bucket('b', tags=tags)\npulumi.export('p', U.apply(lambda a: f'{a}-{B}'))\n",
    # a class of the program: its instances' attributes and its methods are not followed (issue 25)
    "program-class": ("class F:\n    def __init__(self, p):\n        self.p = p\n    def go(self, v):\n        return self.p + str(v)\n"
                      "pulumi.export('p', U.apply(lambda a: F('x').go(a)))\n"),
    "six-deep-formatter": "".join(f"def f{i}(t): return f{i+1}(t)\n" for i in range(5)) + "def f5(t): return str(t)\npulumi.export('p', U.apply(f0))\n",
}

HARMLESS = {
    # Callbacks whose every reachable name is on the static rule's allow-list: registering nothing offline, they
    # stay judged (no partial line).
    "json-dumps": "import json\npulumi.export('p', U.apply(json.dumps))\n",
    "str-methods": "pulumi.export('p', U.apply(lambda a: ','.join(str(a).upper().split('-'))))\n",
    "hash-and-base64": ("import hashlib, base64\n"
                        "pulumi.export('p', U.apply(lambda a: base64.b64encode(hashlib.sha256(a.encode()).digest())))\n"),
    "program-helper": "SEP = {'a': '-'}\ndef fmt(v):\n    return SEP['a'].join([str(v), 'x'])\npulumi.export('p', U.apply(fmt))\n",
    "recursive-formatter": "def fmt(v, n=3):\n    return fmt(v, n-1) if n else str(v)\npulumi.export('p', U.apply(fmt))\n",
    "output-concat": "pulumi.export('p', U.apply(lambda a: pulumi.Output.concat('x', a)))\n",
}


@pytest.mark.parametrize("name", sorted(HIDDEN))
def test_possible_gpu_never_exits_0(tmp_path: Path, name: str) -> None:
    d = _write(tmp_path, name, HEAD + HIDDEN[name])
    (d / "helpers.py").write_text(HELPERS)
    [r] = review([str(d)], now=FIXED_NOW)
    assert r.exit_code != 0, report.to_json([r])["stacks"][0]["status"]


@pytest.mark.parametrize("name", sorted(NO_GPU))
def test_no_gpu_apply_is_not_partial(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + NO_GPU[name]))], now=FIXED_NOW)
    assert r.exit_code == 0, report.to_json([r])["stacks"][0].get("error")


@pytest.mark.parametrize("name", sorted(UNSEEN))
def test_a_callback_that_may_register_for_another_value_is_partial(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + UNSEEN[name]))], now=FIXED_NOW)
    # Not reviewed as a pass: partial, or (nothing else registered) not reviewed at all.
    assert r.status in ("partial", "error") and r.exit_code != 0
    assert "an apply on a value unknown offline was not run" in str(r.rendering.error)


@pytest.mark.parametrize("name", sorted(HARMLESS))
def test_a_callback_reaching_only_pure_helpers_stays_judged(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + "aws.s3.Bucket('b', tags=tags)\n" + HARMLESS[name]))],
                 now=FIXED_NOW)
    assert r.rendering.error is None and r.status != "partial", r.rendering.error
