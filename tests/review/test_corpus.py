"""The review's corpus: programs in the shapes organisations write (multi-language components of pulumi_eks and
pulumi_awsx, resources used as values, lookups as examples write them, failures part way), each reviewed through
``gpulease plan``'s engine and held to its ``expected.yaml``.

``expected.yaml`` (every key optional)::

    exit: 1                      # the stack's exit code: 0 pass, 1 fail, 2 not reviewed, 3 partial
    status: fail                 # or status_not: [partial, error]
    error: null                  # or substrings the error must hold
    children: [[type, name, parent type]]          # registered under a component
    no_children_of_type: [type]
    findings: [[policy, level, resource name, "a substring of the message"]]   # present (among others)
    absent: [[policy, resource name]]              # no such finding
    inputs: [[name, type, input, value]]           # an input of a resource, exactly (a string value: a prefix)
    template_contains: [[name, "text"]]            # a CloudFormation stack's template body
    subnet_of: [instance, subnet]                  # the instance's subnetId is that subnet's id
    cost: {region, items: ["a substring of a cost line"], not_zero: true}   # not_zero: priced, never a known $0
    line_regions: {resource: region}               # the region its compute line was priced in (null: none)
    unknown: [figure]                              # hourly, expected, worstCase: null with its reason
    outputs: {key: value}                          # a string: a prefix; lists and maps matched item by item
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpulease.cli.main import main
from gpulease.review import report
from gpulease.review.engine import review
from gpulease.review.mock_ids import _hex
from tests.policies.test_programs import assert_same_verdicts_as_the_sdks_servicer
from tests.support.clock import FIXED_NOW

PROGRAMS = Path(__file__).parents[1] / "fixtures" / "programs"


def programs() -> list[Path]:
    return sorted(p for p in PROGRAMS.iterdir() if (p / "Pulumi.yaml").exists())


@pytest.fixture(scope="module")
def reviewed() -> dict[str, tuple[dict, int, Any]]:
    """Every program reviewed once, in one run of the engine (as ``gpulease plan DIR DIR ...``)."""
    # The SDKs' Provider classes read the region from the environment (pulumi_aws: AWS_REGION, AWS_DEFAULT_REGION;
    # pulumi_alicloud: ALICLOUD_REGION): the corpus is reviewed without any, as a CI runner has none.
    with pytest.MonkeyPatch.context() as env:
        for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "ALICLOUD_REGION"):
            env.delenv(name, raising=False)
        reviews = review([str(p) for p in programs()], now=FIXED_NOW)
    stacks = report.to_json(reviews)["stacks"]
    return {r.rendering.project: (stack, r.exit_code, r.rendering) for r, stack in zip(reviews, stacks, strict=True)}


def _matches(actual: Any, expected: Any) -> bool:
    if isinstance(expected, str):
        return isinstance(actual, str) and actual.startswith(expected)
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(_matches(actual.get(k), v) for k, v in expected.items())
    if isinstance(expected, list):
        return (isinstance(actual, list) and len(actual) == len(expected)
                and all(_matches(a, e) for a, e in zip(actual, expected, strict=True)))
    return actual == expected


def _resource(stack: dict, name: str, type_: str) -> dict:
    found = [r for r in stack["resources"] if r["name"] == name and r["type"] == type_]
    assert len(found) == 1, f"{type_} {name!r}: {len(found)} registered"
    return found[0]


@pytest.mark.parametrize("program", programs(), ids=lambda p: p.name)
def test_program_is_reviewed_as_expected(program: Path, reviewed: dict) -> None:
    expected = yaml.safe_load((program / "expected.yaml").read_text())
    stack, code, rendering = reviewed[program.name]
    if rendering.error is None or rendering.partial:  # what the pack judged
        assert_same_verdicts_as_the_sdks_servicer(rendering)
    if "exit" in expected:
        assert code == expected["exit"], stack["error"]
    if "status" in expected:
        assert stack["status"] == expected["status"], stack["error"]
    assert stack["status"] not in expected.get("status_not", []), stack["error"]
    if expected.get("error") is None and "error" in expected:
        assert stack["error"] is None
    for text in expected.get("error") or []:
        assert text in (stack["error"] or ""), stack["error"]
    urns = {r["urn"]: r for r in stack["resources"]}
    for type_, name, parent_type in expected.get("children") or []:
        child = _resource(stack, name, type_)
        assert child["parent"] in urns and urns[child["parent"]]["type"] == parent_type, child["parent"]
    for type_ in expected.get("no_children_of_type") or []:
        assert [r["name"] for r in stack["resources"] if r["type"] == type_] == []
    for policy, level, name, text in expected.get("findings") or []:
        hits = [v for v in stack["violations"] if (v["policy"], v["level"], v["resourceName"]) == (policy, level, name)]
        assert any(text in v["message"] for v in hits), (policy, name, [v["message"] for v in hits])
    for policy, name in expected.get("absent") or []:
        assert [v["message"] for v in stack["violations"] if (v["policy"], v["resourceName"]) == (policy, name)] == []
    for name, type_, key, value in expected.get("inputs") or []:
        got = _resource(stack, name, type_)["inputs"].get(key)
        assert _matches(got, value), (name, key, got)
    for name, text in expected.get("template_contains") or []:
        assert text in _resource(stack, name, "aws:cloudformation/stack:Stack")["inputs"]["templateBody"]
    if "subnet_of" in expected:
        instance, subnet = expected["subnet_of"]
        _resource(stack, subnet, "aws:ec2/subnet:Subnet")
        # The subnet's id as the mocks answer it (a hash of its name), never an input copied back.
        assert _resource(stack, instance, "aws:ec2/instance:Instance")["inputs"]["subnetId"] == f"subnet-{_hex('subnet', subnet)}"
    cost = expected.get("cost")
    if cost:
        actual = stack["cost"]
        if "region" in cost:
            assert actual["region"] == cost["region"]
        lines = [line["item"] for line in actual["lines"]]
        for item in cost.get("items") or []:
            assert any(item in line for line in lines), lines
        if cost.get("not_zero"):
            # What the children run is priced; the worst case is never a known $0.
            # (an unpriced instance line makes the hourly figures unknown with the reason, never $0.00)
            assert (actual["maxHourlyUsd"] or 0) > 0 or (not actual["hourlyKnown"] and actual["hourlyReason"]), actual
            assert not (actual["worstCaseKnown"] and actual["worstCaseUsd"] == 0.0), actual
    if "line_regions" in expected:
        got = {line["resource"]: line["region"] for line in stack["cost"]["lines"] if line["compute"]}
        assert got == expected["line_regions"], got
    for figure in expected.get("unknown") or []:
        for figures in (stack["cost"], *stack["cost"]["experiments"]):
            assert figures[f"{figure}Known"] is False and figures[f"{figure}Reason"], (figure, figures)
            assert figures[f"{figure}Usd"] is None, (figure, figures)
    for key, value in (expected.get("outputs") or {}).items():
        assert _matches(stack["outputs"].get(key), value), (key, stack["outputs"].get(key))


def test_the_corpus_has_the_shapes_real_programs_have() -> None:
    used = "\n".join((p / "__main__.py").read_text() for p in programs())
    for shape in ("eks.Cluster(", "eks.ManagedNodeGroup(", "eks.NodeGroupV2(", "eks.NodeGroup(", "awsx.ec2.Vpc(",
                  "awsx.ecs.FargateService(", "awsx.lb.ApplicationLoadBalancer(", "awsx.ecr.Repository(",
                  "pulumi.export(", "register_outputs(", 'most_recent="true"', "cpu_core_count=", "remote=True"):
        assert shape in used, shape


def test_gpulease_plan_of_an_unmodelled_component_exits_partial(capsys) -> None:
    code = main(["plan", str(PROGRAMS / "unmodelled-component"), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert (code, doc["exitCode"], doc["stacks"][0]["status"]) == (3, 3, "partial")


def test_a_node_group_in_a_cloudformation_stack_is_judged_like_an_autoscaling_group(reviewed: dict) -> None:
    stack, _, _ = reviewed["eks-node-group-cloudformation"]
    policies = {(v["policy"], v["resourceName"]) for v in stack["violations"]}
    assert ("spot-only-with-checkpointing", "v100-nodes") in policies
    assert ("max-runtime", "v100-nodes") in policies
    (line,) = [line for line in stack["cost"]["lines"] if line["compute"]]
    assert line["maxHourlyUsd"] == 36.72  # p3.8xlarge on-demand (12.24 / h) × max size 3
    # The EKS control plane is not priced: the stack's hourly figure is unknown, never the nodes' alone.
    assert (stack["cost"]["hourlyKnown"], stack["cost"]["maxHourlyUsd"]) == (False, None)


def test_a_stack_that_names_no_region_is_priced_in_none(reviewed: dict) -> None:
    # No aws:region and no provider: the plan and the pack both say "no region"; no message, line or output
    # pretends one (the mocks' answers name none either).
    stack, _, _ = reviewed["no-region"]
    assert "us-east-1" not in json.dumps(stack)
    cost = stack["cost"]
    assert (cost["region"], cost["worstCaseKnown"], cost["worstCaseUsd"]) == (None, False, None)
    assert "aws instance p4d.24xlarge (no region) (not priced (no region))" in cost["worstCaseReason"]
