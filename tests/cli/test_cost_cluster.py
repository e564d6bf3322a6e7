"""``gpulease cost`` of a cluster: the lines of every node, grouped back into one node's figures and the cluster's
(N nodes plus what they share)."""

from __future__ import annotations

import io
import json
from decimal import ROUND_HALF_UP, Decimal

import pytest
from rich.console import Console

from gpulease.cli import main
from gpulease.cli.cost import print_cost
from gpulease.core.cost.cluster import cluster_costs
from gpulease.review.engine import estimate, render_target
from tests.support.paths import ROOT, STACKS_DIR


def test_cluster_cost_is_every_node_plus_the_shared_bucket(capsys) -> None:
    assert main(["cost", "aws-cluster-4x8", "--json"]) == 0
    [result] = json.loads(capsys.readouterr().out)["data"]["stacks"]
    (cluster,) = result["clusters"]
    (exp,) = result["experiments"]
    assert (cluster["experiment"], cluster["nodes"]) == ("llm13b-pretrain", 4)
    lines = result["lines"]
    node0 = [line for line in lines if line["resource"].startswith("llm13b-pretrain-node0-")]
    # One node: its spot instance, root and data disks and its Elastic IP.
    assert {line["resource"] for line in node0} >= {"llm13b-pretrain-node0-instance", "llm13b-pretrain-node0-data",
                                                    "llm13b-pretrain-node0-ip"}
    assert cluster["nodeHourlyUsd"] == pytest.approx(sum(line["hourlyUsd"] for line in node0))
    bucket = sum(line["hourlyUsd"] for line in lines if "-node" not in line["resource"])
    assert bucket > 0 and cluster["sharedHourlyUsd"] == pytest.approx(bucket)
    assert cluster["clusterHourlyUsd"] == pytest.approx(exp["hourlyUsd"])
    assert cluster["clusterHourlyUsd"] == pytest.approx(4 * cluster["nodeHourlyUsd"] + bucket)
    assert cluster["clusterWorstCaseUsd"] == pytest.approx(exp["worstCaseUsd"])
    assert cluster["nodeWorstCaseUsd"] * 4 < cluster["clusterWorstCaseUsd"]
    # The table, from the same estimate (one render of the stack is enough).
    out = io.StringIO()
    print_cost("aws-cluster-4x8", estimate(render_target(ROOT, STACKS_DIR / "Pulumi.aws-cluster-4x8.yaml")),
               Console(file=out, width=160))
    text = " ".join(out.getvalue().split())
    # the node's lines as shown add up to a cent more than its exact worst case: the summary says so
    added = sum(Decimal(str(line["worstCaseUsd"])).quantize(Decimal("0.01"), ROUND_HALF_UP) for line in node0)
    assert added == Decimal("531.31") and f"{cluster['nodeWorstCaseUsd']:,.2f}" == "531.30"
    assert (f"cluster llm13b-pretrain: 4 nodes at ${cluster['nodeHourlyUsd']:,.3f}/h each "
            f"(worst case ${cluster['nodeWorstCaseUsd']:,.2f} per node; its lines, each rounded, add up to "
            f"${added:,.2f}), ${cluster['clusterHourlyUsd']:,.3f}/h for "
            "the cluster") in text


def test_a_single_instance_stack_has_no_cluster_figures(lora_stack) -> None:
    assert cluster_costs(estimate(lora_stack)) == []
