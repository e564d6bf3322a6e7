"""A workload across the nodes of a cluster: ZeRO-3 shards over every GPU of every node, data parallelism replicates;
the network between the nodes from the fabric table, and the warning when communication would dominate."""

from __future__ import annotations

import math

import pytest

from gpulease.core.catalog import CatalogError, load_catalog
from gpulease.core.catalog.fabric import Fabric, fabric_of, fabric_table
from gpulease.core.sizing import SizingError, Workload, estimate, find_offers, model_shape
from gpulease.core.sizing.cluster import cluster_estimate, find_cluster_offers, network_warnings, step_times

SEVENTY_B = Workload(model_shape("70B"), method="full")


def test_the_fabric_table_records_efa_and_eri_interfaces_and_every_row_is_a_catalog_type() -> None:
    p4d, p5, l20 = fabric_of("aws", "p4d.24xlarge"), fabric_of("aws", "p5.48xlarge"), fabric_of("alicloud", "ecs.gn8is-4x.16xlarge")
    assert (p4d.fabric, p4d.interfaces, p4d.network_gbps, p4d.low_latency) == ("efa", 4, 400, True)
    assert (p5.fabric, p5.interfaces, p5.network_gbps) == ("efa", 32, 3200)
    assert (l20.fabric, l20.interfaces) == ("erdma", 1)
    assert p4d.title == "EFA ×4, 400 Gbit/s" and l20.title == "eRDMA, Gbit/s unknown"
    unknown = fabric_of("aws", "g6.xlarge")
    assert (unknown.fabric, unknown.interfaces, unknown.network_gbps) == ("tcp", 0, None)
    catalog = load_catalog([])
    table = fabric_table()
    assert [r.type for r in table.fabric if catalog.get(r.cloud, r.type) is None] == []
    assert all(table.sources[r.source].url.startswith("https://") for r in table.fabric)


@pytest.mark.parametrize(("row", "words"), [
    ({"cloud": "aws", "type": "x.large", "fabric": "tcp", "interfaces": 2}, "tcp has none"),
    ({"cloud": "aws", "type": "x.large", "fabric": "efa", "interfaces": 0}, "at least one"),
    ({"cloud": "alicloud", "type": "ecs.x", "fabric": "efa", "interfaces": 1}, "not a fabric of alicloud"),
])
def test_a_fabric_row_that_contradicts_itself_is_refused(row: dict, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        Fabric.model_validate(row)


def test_zero3_shards_over_every_gpu_of_every_node_and_ddp_replicates() -> None:
    sharded = cluster_estimate(SEVENTY_B, 8, 4, "zero3")
    assert sharded.total_gb == pytest.approx(estimate(SEVENTY_B, 32).total_gb)
    assert sharded.total_gb < cluster_estimate(SEVENTY_B, 8, 1, "zero3").total_gb
    batch = Workload(model_shape("7B"), method="full", batch=64)
    replicated = cluster_estimate(batch, 8, 4, "ddp")
    # Each GPU holds the whole states and ceil(64 / 32) = 2 sequences.
    assert replicated.total_gb == pytest.approx(estimate(Workload(model_shape("7B"), method="full", batch=2), 1).total_gb)
    assert replicated.total_gb > cluster_estimate(batch, 8, 4, "zero3").total_gb
    with pytest.raises(SizingError, match="accepted: zero3, ddp"):
        cluster_estimate(batch, 8, 4, "tp")


def test_step_times_follow_the_traffic_formulas() -> None:
    catalog = load_catalog([])
    p4de = catalog.get("aws", "p4de.24xlarge")
    params = SEVENTY_B.shape.params
    comm, compute = step_times(SEVENTY_B, p4de, 4, "zero3", fabric_of("aws", "p4de.24xlarge"))
    # ZeRO-3: 3 · P · 2 bytes · (n-1)/n through 400 Gbit/s; compute 6 · P · tokens at 40 % of 32 A100s' 312 TFLOPS.
    assert comm == pytest.approx(3 * params * 2 * 0.75 * 8 / 400e9)
    assert compute == pytest.approx(6 * params * 1024 / (32 * 312e12 * 0.4))
    lora = Workload(model_shape("70B"), method="lora")
    comm_ddp, compute_lora = step_times(lora, p4de, 4, "ddp", fabric_of("aws", "p4de.24xlarge"))
    assert comm_ddp == pytest.approx(2 * lora.trainable_params * 2 * 0.75 * 8 / 400e9)
    assert compute_lora == pytest.approx(4 * params * 1024 / (32 * 312e12 * 0.4))
    assert step_times(SEVENTY_B, p4de, 4, "zero3", fabric_of("aws", "not.listed"))[0] is None


def test_the_network_warnings_name_what_would_decide_the_speed() -> None:
    efa, tcp, unknown = fabric_of("aws", "p4d.24xlarge"), fabric_of("aws", "p3.16xlarge"), fabric_of("aws", "g6.xlarge")
    (dominate,) = network_warnings(efa, 6.35, 0.11, 4)
    assert dominate.startswith("communication would dominate: about 6.35 s per step over EFA ×4, 400 Gbit/s against 0.11 s")
    assert network_warnings(efa, 0.1, 0.5, 4) == []
    assert network_warnings(efa, 0.6, 0.5, 4)[0].startswith("communication would dominate: about 0.60 s")
    assert network_warnings(tcp, 0.1, 0.5, 2) == [
        "nodes talk over TCP (TCP, 25 Gbit/s), no EFA or eRDMA: expect lower scaling than on a fabric"]
    assert "cannot be judged" in network_warnings(unknown, None, 0.5, 2)[0]
    assert network_warnings(unknown, None, None, 1) == []


def test_cluster_offers_hold_the_workload_on_every_node_cheapest_cluster_first() -> None:
    catalog = load_catalog([])
    assert find_cluster_offers(SEVENTY_B, catalog, "aws", "us-east-1", nodes=1, gpus=8) == []
    offers = find_cluster_offers(SEVENTY_B, catalog, "aws", "us-east-1", nodes=4, gpus=8)
    assert [o.instance.type for o in offers] == ["p4de.24xlarge", "p5.48xlarge"]  # 67 GB per GPU: the 80 GB A100/H100
    top = offers[0]
    assert (top.gpus, top.within_node, top.fabric.fabric) == (32, "NVLink", "efa")
    assert top.cluster_usd == pytest.approx(4 * top.node_usd)
    assert any(w.startswith("communication would dominate") for w in top.warnings)
    d = top.as_dict()
    assert d["betweenNodes"] == {"fabric": "efa", "interfaces": 4, "networkGbps": 400}
    assert (d["nodes"], d["gpusPerNode"], d["parallel"]) == (4, 8, "zero3")
    with pytest.raises(SizingError, match="nodes must be at least 1"):
        find_cluster_offers(SEVENTY_B, catalog, "aws", "us-east-1", nodes=0)


def test_a_fit_over_nodes_resolves_to_a_type_that_holds_its_share() -> None:
    catalog = load_catalog([])
    alone = find_offers(SEVENTY_B, catalog, "aws", "us-east-1", gpus=8)
    shared = find_offers(SEVENTY_B, catalog, "aws", "us-east-1", gpus=8, nodes=4)
    assert alone == [] and shared[0].instance.type == "p4de.24xlarge"
    assert shared[0].estimate.total_gb == pytest.approx(estimate(SEVENTY_B, 32).total_gb)
    assert math.isclose(shared[0].estimate.total_gb, cluster_estimate(SEVENTY_B, 8, 4, "zero3").total_gb)


def test_an_unknown_source_in_the_fabric_table_is_a_packaging_error(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from gpulease.core.catalog import fabric

    bad = tmp_path / "fabric.yaml"
    bad.write_text("sources: {}\nfabric:\n  - {cloud: aws, type: p4d.24xlarge, fabric: efa, interfaces: 4, source: nowhere}\n")
    monkeypatch.setattr(fabric, "FABRIC_FILE", bad)
    fabric.fabric_table.cache_clear()
    try:
        with pytest.raises(CatalogError, match="unknown source"):
            fabric.fabric_table()
    finally:
        fabric.fabric_table.cache_clear()


def test_every_catalog_gpu_has_a_peak_so_compute_time_is_known() -> None:
    from gpulease.core.sizing.cluster import PEAK_TFLOPS

    assert {it.gpu_model for it in load_catalog([]).instances} - set(PEAK_TFLOPS) == set()
