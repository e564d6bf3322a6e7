"""The plan's ``quota-gpu-vcpus`` advisory (gpulease/review/preconditions.py, gpulease/review/gpu_quotas.py): how
many vCPUs of which GPU quota a stack's instances need (vCPUs per instance x instances), with the quota's code on
AWS and the billing method's attribute on Alibaba Cloud (not readable offline); the same codes ``gpulease check``
reads (gpulease/lifecycle/quotas.py)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from gpulease.lifecycle import quotas
from gpulease.review import gpu_quotas
from gpulease.review import preconditions as pc
from tests.review.example_renders import STACKS, every_example, example

RULE = next(p for p in pc.PRECONDITIONS if p.name == "gpu-vcpus")


def by_name(name: str):
    return example(next(p for p in STACKS if p.name == f"Pulumi.{name}.yaml"))


@pytest.mark.parametrize(("stack", "line"), [
    ("aws-cluster-4x8", "384 vCPUs of All P Spot Instance Requests (L-7212CCBC, spot): 4 x p4d.24xlarge (96 vCPUs); "
     "new accounts often have 0; gpulease check reads the account's value, or Service Quotas (ec2 L-7212CCBC) "
     "before pulumi up"),
    ("ali-cluster-2x8", "256 vCPUs of the region's on-demand vCPU quota (DescribeAccountAttributes "
     "max-postpaid-instance-vcpu-count, shared by every ECS instance of that billing method): 2 x "
     "ecs.gn7e-c16g1.32xlarge (128 vCPUs); not readable offline: gpulease check reads the limit and what is in use, "
     "or Quota Center (https://quotas.console.aliyun.com)"),
])
def test_the_advisory_says_the_vcpus_and_the_quota_code(stack: str, line: str) -> None:
    assert dict(pc.advisories(by_name(stack)))["gpu-vcpus"] == line


def test_every_gpu_example_stack_is_told_its_gpu_quota() -> None:
    for name, rendering in every_example():
        found = [line for row, line in pc.advisories(rendering) if row == "gpu-vcpus"]
        assert bool(found) == ("prep" not in name), name  # a preparation stack runs a CPU instance
        for need in pc.gpu_vcpu_needs(rendering):
            assert need.vcpus == sum(v * n for _, v, n in need.instances) > 0, name
            if need.cloud == "aws":
                assert (need.code, need.name) in gpu_quotas.AWS_QUOTAS.values(), name


def test_on_demand_g_instances_count_against_l_db2e81ba() -> None:
    r = by_name("aws-lora-7b")
    resources = [dataclasses.replace(x, inputs={k: v for k, v in x.inputs.items() if k != "instanceMarketOptions"})
                 for x in r.resources]
    (need,) = pc.gpu_vcpu_needs(dataclasses.replace(r, resources=resources))
    assert (need.code, need.market, need.name) == ("L-DB2E81BA", "on-demand", "Running On-Demand G and VT instances")


def test_check_and_the_plan_read_one_table() -> None:
    assert quotas.AWS_QUOTAS is gpu_quotas.AWS_QUOTAS and quotas.ALICLOUD_ATTRIBUTES is gpu_quotas.ALICLOUD_ATTRIBUTES
    assert RULE.advisory and "L-417A185B" in RULE.rule and "L-3819A6DF" in RULE.rule


def test_the_plan_shows_it_as_an_advisory(capsys) -> None:
    from gpulease.cli import main

    assert main(["plan", "ali-cluster-2x8", "--format", "json"]) == 0
    (stack,) = json.loads(capsys.readouterr().out)["stacks"]
    (found,) = [v for v in stack["violations"] if v["policy"] == "quota-gpu-vcpus"]
    assert found["level"] == "advisory" and "256 vCPUs of the region's on-demand vCPU quota" in found["message"]
    assert stack["status"] == "pass"
