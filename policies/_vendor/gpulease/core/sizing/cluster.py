"""A workload across the nodes of a cluster: memory per GPU, the network between nodes, and whether it would
dominate a training step.

Memory. ZeRO-3 / FSDP (``zero3``) shards weights, gradients and optimizer states over every GPU of every node
(``estimate(workload, nodes × gpus)``); plain data parallelism (``ddp``) replicates them on each GPU, and only the
batch splits (``estimate`` of one GPU holding ``ceil(batch / (nodes × gpus))`` sequences).

Communication per optimizer step, through each node's network (the slowest link; within a node NVLink or PCIe is
faster): ZeRO-3 gathers the weights twice (forward, backward) and reduce-scatters the gradients, so each node takes
in about ``3 · P · b · (n−1)/n`` bytes; data parallelism all-reduces the trainable gradients, ``2 · T · b · (n−1)/n``
(a ring all-reduce sends and receives each byte twice; Rajbhandari et al. 2020, ZeRO, section 7). Compute per step is
``k · P · tokens`` FLOPs (k = 6 for full training, forward and backward; 4 when only adapters train, no weight
gradients of the base), at ``MFU`` of the GPUs' dense bf16/fp16 tensor peak. When the communication takes longer
than the compute it cannot hide behind it: a warning says the network would dominate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from gpulease.core.catalog.fabric import Fabric, fabric_of
from gpulease.core.catalog.models import Catalog, InstanceType
from gpulease.core.sizing.estimate import BYTES, MemoryEstimate, estimate
from gpulease.core.sizing.offers import offer_warnings
from gpulease.core.sizing.shapes import SizingError
from gpulease.core.sizing.workload import DEFAULT_HEADROOM, Workload

Parallel = Literal["zero3", "ddp"]
PARALLEL: tuple[str, ...] = ("zero3", "ddp")

PEAK_TFLOPS: dict[str, float] = {
    # Dense tensor-core peak per GPU in bf16 (fp16 on T4 and V100, which have no bf16), from NVIDIA's datasheets:
    # https://www.nvidia.com/en-us/data-center/a100/ , /h100/ , /l4/ , /a10/ , /tesla-t4/ , /v100/ , /l20/ , /l40s/ (as
    # listed for each product; sparsity figures halved). A10G is AWS's variant of the A10 (g5 documentation).
    "A100": 312.0,
    "H100": 989.0,
    "L4": 121.0,
    "A10": 125.0,
    "A10G": 125.0,
    "L20": 119.5,
    "L40S": 362.0,
    "T4": 65.0,
    "V100": 125.0,
}
MFU = 0.4
"""Model FLOPs utilisation assumed for the compute time (a well-tuned transformer run reaches 0.35–0.55)."""


@dataclass(frozen=True)
class ClusterOffer:
    """An instance type whose GPUs hold the workload when ``nodes`` of them train together."""

    instance: InstanceType
    region: str
    nodes: int
    parallel: str
    estimate: MemoryEstimate
    fabric: Fabric
    comm_seconds: float | None
    compute_seconds: float | None
    warnings: list[str] = field(default_factory=list)

    @property
    def gpus(self) -> int:
        return self.nodes * self.instance.gpu_count

    @property
    def node_usd(self) -> float:
        return self.instance.prices[self.region]

    @property
    def cluster_usd(self) -> float:
        return self.node_usd * self.nodes

    @property
    def within_node(self) -> str:
        return "NVLink" if self.instance.interconnect == "nvlink" else "PCIe"

    def as_dict(self) -> dict[str, Any]:
        it = self.instance
        return {
            "instanceType": it.type,
            "region": self.region,
            "nodes": self.nodes,
            "gpusPerNode": it.gpu_count,
            "gpus": self.gpus,
            "gpuModel": it.gpu_model,
            "parallel": self.parallel,
            "neededPerGpuGb": round(self.estimate.total_gb, 2),
            "withinNode": self.within_node,
            "betweenNodes": {"fabric": self.fabric.fabric, "interfaces": self.fabric.interfaces,
                             "networkGbps": self.fabric.network_gbps},
            "commSecondsPerStep": None if self.comm_seconds is None else round(self.comm_seconds, 4),
            "computeSecondsPerStep": None if self.compute_seconds is None else round(self.compute_seconds, 4),
            "onDemandUsdPerHourPerNode": self.node_usd,
            "onDemandUsdPerHourCluster": round(self.cluster_usd, 4),
            "warnings": self.warnings,
        }


def cluster_estimate(workload: Workload, gpus_per_node: int, nodes: int, parallel: str) -> MemoryEstimate:
    """Memory per GPU of ``workload`` on ``nodes`` × ``gpus_per_node`` GPUs (see the module docstring)."""
    if parallel not in PARALLEL:
        raise SizingError(f"parallel {parallel!r}; accepted: {', '.join(PARALLEL)}")
    total = nodes * gpus_per_node
    if parallel == "zero3":
        return estimate(workload, total)
    return estimate(replace(workload, batch=math.ceil(workload.batch / total)), 1)


def step_times(workload: Workload, it: InstanceType, nodes: int, parallel: str, fabric: Fabric) -> tuple[float | None, float | None]:
    """(seconds of inter-node communication, seconds of compute) per optimizer step; None where unknown."""
    b = BYTES[workload.precision]
    params, share = workload.shape.params, (nodes - 1) / nodes
    volume = 3 * params * b * share if parallel == "zero3" else 2 * workload.trainable_params * b * share
    comm = volume * 8 / (fabric.network_gbps * 1e9) if fabric.network_gbps else None
    peak = PEAK_TFLOPS.get(it.gpu_model)
    factor = 6 if workload.method == "full" else 4
    flops = factor * params * workload.seq_len * workload.batch
    compute = flops / (nodes * it.gpu_count * peak * 1e12 * MFU) if peak else None
    return comm, compute


def find_cluster_offers(
    workload: Workload,
    catalog: Catalog,
    cloud: str,
    region: str,
    *,
    nodes: int,
    parallel: str = "zero3",
    gpus: int | None = None,
    headroom: float = DEFAULT_HEADROOM,
) -> list[ClusterOffer]:
    """Instance types priced in ``region`` whose GPUs hold ``workload`` on ``nodes`` nodes, cheapest cluster first."""
    if nodes < 1:
        raise SizingError("nodes must be at least 1")
    if not 0 <= headroom < 1:
        raise SizingError(f"headroom {headroom} must be a fraction in [0, 1)")
    offers = []
    for it in catalog.instances:
        if it.cloud != cloud or region not in it.prices or (gpus is not None and it.gpu_count != gpus):
            continue
        est = cluster_estimate(workload, it.gpu_count, nodes, parallel)
        if est.total_gb > it.gpu_memory_gb * (1 - headroom):
            continue
        fabric = fabric_of(cloud, it.type)
        comm, compute = step_times(workload, it, nodes, parallel, fabric)
        offers.append(ClusterOffer(it, region, nodes, parallel, est, fabric, comm, compute,
                                   offer_warnings(workload, it) + network_warnings(fabric, comm, compute, nodes)))
    return sorted(offers, key=lambda o: (o.cluster_usd, o.instance.gpu_count, o.instance.type))


def network_warnings(fabric: Fabric, comm: float | None, compute: float | None, nodes: int) -> list[str]:
    """Why the network between the nodes may decide the speed."""
    if nodes <= 1:
        return []
    if comm is None:
        return [f"the bandwidth between nodes is not in the catalog ({fabric.title}): the cost of communication cannot be "
                "judged"]
    if compute is not None and comm > compute:
        return [f"communication would dominate: about {comm:.2f} s per step over {fabric.title} against "
                f"{compute:.2f} s of compute; raise the batch (or seqLen) per step, or use fewer, larger nodes"]
    if fabric.fabric == "tcp":
        return [f"nodes talk over TCP ({fabric.title}), no EFA or eRDMA: expect lower scaling than on a fabric"]
    return []

