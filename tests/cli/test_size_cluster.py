"""``gpulease size --nodes N``: the workload across a cluster's nodes, the network within and between the nodes of
each candidate, per-node and cluster prices, and the warning when communication would dominate."""

from __future__ import annotations

import json

import pytest

from gpulease.cli import main


def test_size_across_nodes_json_reports_the_interconnect_and_cluster_price(capsys) -> None:
    assert main(["size", "--params", "70B", "--method", "full", "--nodes", "4", "--gpus", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["nodes"], out["parallel"]) == (4, "zero3")
    offers = {o["instanceType"]: o for o in out["offers"]}
    assert list(offers) == ["p4de.24xlarge", "p5.48xlarge"]
    p5 = offers["p5.48xlarge"]
    assert (p5["gpus"], p5["withinNode"], p5["betweenNodes"]) == (32, "NVLink", {"fabric": "efa", "interfaces": 32,
                                                                                "networkGbps": 3200})
    assert p5["onDemandUsdPerHourCluster"] == round(4 * p5["onDemandUsdPerHourPerNode"], 4)
    assert any(w.startswith("communication would dominate") for w in offers["p4de.24xlarge"]["warnings"])


def test_size_across_nodes_table_and_a_workload_no_cluster_holds(capsys) -> None:
    assert main(["size", "--params", "70B", "--method", "full", "--nodes", "4", "--gpus", "8"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "on 4 nodes (ZeRO-3: states sharded over every GPU)" in text
    assert "EFA ×4, 400 Gbit/s" in text and "NVLink" in text and "per node" in text and "cluster" in text
    assert "warning (p4de.24xlarge): communication would dominate: about 6.35 s per step over EFA ×4" in text
    # Data parallelism keeps a full 7B model's states on every GPU: no 80 GB GPU holds them.
    assert main(["size", "--params", "7B", "--method", "full", "--nodes", "2", "--parallel", "ddp", "--gpus", "8"]) == 1
    assert "holds this on 2 nodes" in " ".join(capsys.readouterr().out.split())
    with pytest.raises(SystemExit) as exit_:
        main(["size", "--params", "7B", "--nodes", "0"])
    assert exit_.value.code == 2 and "argument --nodes: '0' is not a whole number of at least 1; accepted: 1 or more" \
        in capsys.readouterr().err
