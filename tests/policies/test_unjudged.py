"""unjudged-gpu-compute: a resource of a type no compute form reads that asks for GPUs is a mandatory finding,
naming its type token and the input path; CPU types, known forms and free types are not reported."""

from __future__ import annotations

import pytest

import gpulease.review.models  # noqa: F401 - registers every model
from gpulease.core.compute.accelerators import is_accelerated, is_accelerated_family
from gpulease.core.compute.components import MODELLED_COMPONENTS
from gpulease.core.compute.scan import gpu_mentions
from gpulease.review import mock_registry
from tests.support.policy import analyze, found, res


def _unjudged(*resources: object, config: dict | None = None) -> list[tuple[str | None, str]]:
    return [(h[2], h[3]) for h in found(analyze(*resources, config=config), "unjudged-gpu-compute")]


@pytest.mark.parametrize(("inputs", "path", "what"), [
    ({"computeResources": {"instanceTypes": ["m5.large", "p4d.24xlarge"]}}, "computeResources.instanceTypes",
     "p4d.24xlarge"),
    ({"instanceClass": "ml.p4d.24xlarge"}, "instanceClass", "ml.p4d.24xlarge"),
    ({"instanceType": "ecs.gn7i-c8g1.2xlarge"}, "instanceType", "ecs.gn7i-c8g1.2xlarge"),
    ({"spec": {"affinity": {"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge"]}]}]}}}}},
     "spec.affinity.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0]",
     "node.kubernetes.io/instance-type In ['g5.xlarge']"),
    ({"spec": {"nodeSelector": {"karpenter.k8s.aws/instance-family": "p5"}}},
     "spec.nodeSelector.karpenter.k8s.aws/instance-family", "p5"),
    ({"spec": {"containers": [{"resources": {"requests": {"nvidia.com/gpu": "2"}}}]}},
     "spec.containers[0].resources.requests.nvidia.com/gpu", "nvidia.com/gpu=2"),
])
def test_gpu_compute_in_an_unknown_type_is_named_with_its_path(inputs, path, what):
    assert gpu_mentions(inputs) == [(path, what)]
    ((name, message),) = _unjudged(res("custom:ml/trainer:Trainer", "t", inputs))
    assert name == "t"
    assert message.startswith(f"GPU compute the pack cannot judge: Trainer 't' (custom:ml/trainer:Trainer) asks "
                              f"for {what} at {path}; no compute form reads this type")


def test_cpu_types_known_forms_tags_and_accepted_names_are_not_reported():
    assert _unjudged(res("aws:rds/instance:Instance", "db", {"instanceClass": "db.r5.24xlarge"})) == []
    assert _unjudged(res("custom:x/y:Y", "y", {"tags": {"instanceType": "p4d.24xlarge"}, "gpu": 0})) == []
    # A known form is judged by the other rules, not reported as unjudged.
    assert _unjudged(res("aws:ec2/instance:Instance", "i", {"instanceType": "p4d.24xlarge"})) == []
    gpu = res("custom:ml/trainer:Trainer", "t", {"instanceType": "p4d.24xlarge"})
    assert _unjudged(gpu, config={"unjudged-gpu-compute": {"acceptUnjudged": [gpu.urn]}}) == []
    assert _unjudged(gpu, config={"unjudged-gpu-compute": {"acceptUnjudged": ["custom:ml/trainer:Trainer::t"]}}) == []


def test_accepting_a_bare_name_or_another_type_of_the_same_name_accepts_nothing():
    gpu = res("custom:ml/trainer:Trainer", "t", {"instanceType": "p4d.24xlarge"})
    for entry in ("t", "custom:other/x:X::t", "custom:ml/trainer:Trainer::t2", gpu.urn + "x"):
        assert [n for n, _ in _unjudged(gpu, config={"unjudged-gpu-compute": {"acceptUnjudged": [entry]}})] == ["t"]


def test_a_modelled_component_is_judged_by_its_children_not_reported():
    assert set(mock_registry.COMPONENTS) == MODELLED_COMPONENTS
    cluster = res("eks:index:Cluster", "c", {"instanceType": "p4d.24xlarge", "desiredCapacity": 2})
    assert _unjudged(cluster) == []
    # A component the review has no model for is scanned like any other type.
    other = res("acme:index:GpuCluster", "g", {"instanceType": "p4d.24xlarge"})
    assert [n for n, _ in _unjudged(other)] == ["g"]


@pytest.mark.parametrize(("inputs", "path", "what"), [
    ({"ec2InstanceType": "p4d.24xlarge"}, "ec2InstanceType", "p4d.24xlarge"),
    ({"dedicatedHostType": "ddh.gn7i"}, "dedicatedHostType", "ddh.gn7i"),
    ({"instanceType": "stream.graphics.g5.xlarge"}, "instanceType", "stream.graphics.g5.xlarge"),
    ({"instanceType": "stream.graphics-pro.4xlarge"}, "instanceType", "stream.graphics-pro.4xlarge"),
    ({"masterInstanceType": "P4D.24XLARGE"}, "masterInstanceType", "P4D.24XLARGE"),
    ({"instanceType": " p4d.24xlarge"}, "instanceType", " p4d.24xlarge"),
])
def test_every_instance_type_field_and_spelling_is_scanned(inputs, path, what):
    assert gpu_mentions(inputs) == [(path, what)]


def test_cpu_hosts_and_streaming_types_are_not_gpus():
    assert [t for t in ("ddh.g6", "ddh.c5", "stream.standard.large", "stream.compute.xlarge", "ddh.", " m5.large ",
                        "M5.LARGE") if is_accelerated(t)] == []
    assert [t for t in ("ddh.gn7i", "DDH.GN6I", "stream.graphics.g4dn.xlarge", "stream.graphics-design.large",
                        "P4D.24XLARGE", " p4d.24xlarge ", "\tml.g5.xlarge") if is_accelerated(t)] == [
        "ddh.gn7i", "DDH.GN6I", "stream.graphics.g4dn.xlarge", "stream.graphics-design.large", "P4D.24XLARGE",
        " p4d.24xlarge ", "\tml.g5.xlarge"]


def test_accelerated_names_of_both_clouds_and_sagemaker():
    assert [t for t in ("ml.p4d.24xlarge", "ml.g5.xlarge", "ml.m5.large", "db.r5.24xlarge") if is_accelerated(t)] == [
        "ml.p4d.24xlarge", "ml.g5.xlarge"]
    assert [f for f in ("p4d", "g5", "trn1", "m5", "c7g", "optimal", "p") if is_accelerated_family(f)] == [
        "p4d", "g5", "trn1"]
