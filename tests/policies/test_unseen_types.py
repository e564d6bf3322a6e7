"""unseen-compute-types: a compute form whose instance types the pack cannot see (a template outside the stack,
an endpoint configuration by name, a NodePool allowing any type) is a mandatory finding, never a pass."""

from __future__ import annotations

from tests.support.policy import analyze, found, res

KARPENTER = "kubernetes:karpenter.sh/v1:NodePool"


def _unseen(*resources: object, config: dict | None = None) -> list[tuple[str | None, str]]:
    return [(n, d) for _, _, n, d in found(analyze(*resources, config=config), "unseen-compute-types")]


def test_an_external_launch_template_by_id_or_name_is_compute_the_pack_cannot_judge():
    group = res("aws:autoscaling/group:Group", "workers", {"maxSize": 4, "minSize": 0,
                                                           "launchTemplate": {"id": "lt-0123456789abcdef0"}})
    assert _unseen(group) == [("workers", "compute the pack cannot judge: Group 'workers' (autoscaling group): it "
                               "launches from 'lt-0123456789abcdef0', which is not in this stack, so the instance "
                               "types it runs are not visible; its deadline, market and cost cannot be checked; "
                               "accepted: an instance type (or a template in the stack naming one) the pack reads, "
                               "or the resource in acceptUnjudged after review, by its URN or as "
                               "'<type token>::<name>'")]
    instance = res("aws:ec2/instance:Instance", "box", {"launchTemplate": {"name": "shared-gpu"}})
    assert [n for n, _ in _unseen(instance)] == ["box"]
    # Its own type wins over the template's: visible.
    typed = res("aws:ec2/instance:Instance", "box", {"instanceType": "m5.large", "launchTemplate": {"name": "x"}})
    assert _unseen(typed) == []
    accept = {"unseen-compute-types": {"acceptUnjudged": ["aws:ec2/instance:Instance::box"]}}
    assert _unseen(instance, config=accept) == []


def test_a_sagemaker_endpoint_naming_a_configuration_outside_the_stack_is_reported():
    endpoint = res("aws:sagemaker/endpoint:Endpoint", "ep", {"endpointConfigName": "prod-config"})
    assert [d.split(": it ")[1].split(";")[0] for _, d in _unseen(endpoint)] == [
        "launches from 'prod-config', which is not in this stack, so the instance types it runs are not visible"]
    config = res("aws:sagemaker/endpointConfiguration:EndpointConfiguration", "cfg", {
        "name": "prod-config", "productionVariants": [{"instanceType": "ml.m5.large", "initialInstanceCount": 1}]})
    assert _unseen(endpoint, config) == []


def test_an_unrestricted_karpenter_node_pool_may_launch_gpus():
    pool = res(KARPENTER, "any", {"spec": {"template": {"spec": {"requirements": [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "NotIn", "values": ["m5.large"]}]}}}})
    ((name, detail),) = _unseen(pool)
    assert name == "any"
    assert "no requirement restricts its instance types" in detail
    cpu = res(KARPENTER, "cpu", {"spec": {"template": {"spec": {"requirements": [
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5", "c6i"]}]}}}})
    assert _unseen(cpu) == []
