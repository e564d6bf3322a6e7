"""The registry the mocks read, the component models in it, and lookup arguments read as the provider reads them."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pulumi_alicloud
import pulumi_aws
import pytest

from gpulease.review import mock_registry, mocks
from gpulease.review.lookup_args import LookupArgumentError, coerce_args
from gpulease.review.remote_components import compute_inputs

# Through the packages: importing the modules ``pulumi_aws.ec2.get_ami`` by name would put the module where the
# package's lookup function ``get_ami`` is, for every later program in this process.
GetAmiResult = pulumi_aws.ec2.GetAmiResult
GetInstanceTypesResult = pulumi_alicloud.ecs.GetInstanceTypesResult


def test_a_token_answered_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="answered twice: aws:ec2/getAmi:getAmi"):
        mock_registry.register_answers(calls={"aws:ec2/getAmi:getAmi": lambda m, a: {}})
    model = next(iter(mock_registry.COMPONENTS.values()))
    with pytest.raises(ValueError, match=f"modelled twice: {model.token}"):
        mock_registry.register_model(model)


def test_the_mocks_read_every_answer_from_the_registry() -> None:
    assert mocks.CALLS is mock_registry.CALLS
    assert {"aws:ec2/getAmi:getAmi", "alicloud:ecs/getInstanceTypes:getInstanceTypes",
            "aws:iam/getPolicyDocument:getPolicyDocument"} <= set(mock_registry.CALLS)
    assert {"aws:ec2/instance:Instance", "alicloud:ecs/instance:Instance", "time:index/static:Static"} <= set(
        mock_registry.RESOURCES)


def test_every_model_is_a_component_its_sdk_declares() -> None:
    assert sorted(mock_registry.COMPONENTS) == [
        "awsx:ec2:Vpc", "awsx:ecr:Repository", "awsx:ecs:EC2Service", "awsx:ecs:FargateService",
        "awsx:lb:ApplicationLoadBalancer", "awsx:lb:NetworkLoadBalancer", "eks:index:Cluster",
        "eks:index:ManagedNodeGroup", "eks:index:NodeGroup", "eks:index:NodeGroupV2"]
    for token in mock_registry.COMPONENTS:
        package = {"eks": "pulumi_eks", "awsx": "pulumi_awsx"}[token.split(":")[0]]
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.origin is not None
        assert f'"{token}"' in Path(spec.origin).read_text(), token


def test_an_ordinary_review_never_imports_a_component_sdk() -> None:
    code = ("import sys, gpulease.review.engine, gpulease.review.mocks; "
            "print([m for m in ('pulumi_eks', 'pulumi_awsx', 'pulumi_kubernetes') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(("given", "read"), [("true", True), ("True", True), ("1", True), ("f", False),
                                             ("false", False), (True, True), (None, None)])
def test_a_boolean_argument_is_read_as_the_provider_reads_it(given, read) -> None:
    args = coerce_args("aws:ec2/getAmi:getAmi", {"mostRecent": given, "owners": ["amazon"]}, GetAmiResult, None)
    assert args == {"mostRecent": read, "owners": ["amazon"]}


@pytest.mark.parametrize("given", ["yes", "", "on", 1.5])
def test_a_boolean_the_provider_refuses_names_the_lookup_the_argument_and_the_line(given) -> None:
    with pytest.raises(LookupArgumentError) as caught:
        coerce_args("aws:ec2/getAmi:getAmi", {"mostRecent": given}, GetAmiResult, "__main__.py:6")
    assert str(caught.value).startswith(f"the lookup aws:ec2/getAmi:getAmi at __main__.py:6: argument "
                                        f"mostRecent={given!r} is not a bool; accepted: true or false")


def test_numbers_are_read_from_their_decimal_strings_and_lists_are_left_alone() -> None:
    args = coerce_args("alicloud:ecs/getInstanceTypes:getInstanceTypes",
                       {"cpuCoreCount": "2", "memorySize": "4", "ids": ["a"]}, GetInstanceTypesResult, None)
    assert args == {"cpuCoreCount": 2, "memorySize": 4.0, "ids": ["a"]}
    with pytest.raises(LookupArgumentError, match=r"argument cpuCoreCount=.two. is not an integer; accepted: an integer"):
        coerce_args("alicloud:ecs/getInstanceTypes:getInstanceTypes", {"cpuCoreCount": "two"},
                    GetInstanceTypesResult, None)


def test_the_inputs_that_name_compute_are_listed_with_their_paths() -> None:
    inputs = {"instanceType": "p5.48xlarge", "tags": {"team": "ml"}, "pools": [{"maxSize": 8, "name": "a"}],
              "scalingConfig": {"desiredSize": 2}, "vpcId": "vpc-1"}
    assert compute_inputs(inputs) == ["instanceType='p5.48xlarge'", "pools[0].maxSize=8",
                                      "scalingConfig.desiredSize=2"]
