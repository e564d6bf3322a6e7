"""What a cluster node knows before its job starts: its rank, its peers, the rendezvous and the fabric settings.

``ClusterSettings`` travels in the node's settings (``settings.json``, key ``cluster``; absent on a single node, so
a single node's user-data is what it was). On the node, ``instance/cluster.py`` writes ``CLUSTER_ENV_PATH`` from it,
the launcher (``gpulease-launch``) runs ``torchrun`` with it, and the watchdog tells its peers of a spot notice at
their addresses (``notice_port``) and through a marker in the bucket (``notice_uri``).

The rendezvous is rank 0's private address, fixed at plan time (``components/cluster.py`` picks every node's address
in the subnet): nothing has to be discovered after boot, and no node's user-data depends on another node's
creation, so the nodes start together.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

CLUSTER_ENV_PATH = "/etc/gpulease/cluster.env"
LAUNCH_COMMAND = "/usr/local/bin/gpulease-launch"

# The fabric's variables, exported by the launcher to torchrun and its workers.
# - EFA: libfabric's EFA provider for NCCL through the aws-ofi-nccl plugin, with GPUDirect RDMA on the types that have
#   it (p4d, p4de, p5): "Get started with EFA and NCCL",
#   https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start-nccl.html, and the plugin's variables,
#   https://github.com/aws/aws-ofi-nccl (FI_PROVIDER selects the provider). The Deep Learning AMIs ship the EFA
#   software and the plugin; a plain Ubuntu image has neither (docs/clusters.md).
# - eRDMA: NCCL finds the ERI as an RDMA device by itself once Alibaba's eRDMA driver is installed; its bootstrap
#   traffic goes over the primary interface eth0 (https://www.alibabacloud.com/help/en/ecs/user-guide/erdma-usage).
# - TCP: no RDMA device to look for.
FABRIC_ENV: dict[str, dict[str, str]] = {
    "efa": {"FI_PROVIDER": "efa", "NCCL_SOCKET_IFNAME": "^lo,docker"},
    "erdma": {"NCCL_SOCKET_IFNAME": "eth0"},
    "tcp": {"NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "^lo,docker"},
}
EFA_DEVICE_RDMA_TYPES = ("p4d.", "p4de.", "p5.")
"""GPUDirect RDMA over EFA (``FI_EFA_USE_DEVICE_RDMA=1``): the P4 and P5 types (the EFA and NCCL guide above)."""
FAILURE_ENV: dict[str, str] = {
    # A failed or hung collective raises instead of blocking for ever, so torchrun sees the worker fail and (with
    # --max-restarts 0) ends the job on every node: PyTorch's ProcessGroupNCCL documentation
    # (https://pytorch.org/docs/stable/distributed.html#torch.distributed.init_process_group, "timeout").
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
    "NCCL_DEBUG": "WARN",
}


class ClusterSettings(BaseModel):
    """One node's view of its cluster."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cluster_id: str
    """``<stack>.<experiment>``: torchrun's run id and what a spot notice must name to be heeded."""
    rank: int = Field(..., ge=0)
    nodes: int = Field(..., ge=2)
    gpus_per_node: int = Field(..., ge=1)
    addresses: list[str]
    """Every node's private address, in rank order; ``addresses[0]`` is the rendezvous address."""
    rendezvous_port: int
    notice_port: int
    join_timeout_seconds: int
    max_restarts: int = 0
    """A lost node cannot come back into a fixed-size cluster: the job ends and the next run resumes from the last
    checkpoint."""
    fabric: str
    fabric_env: dict[str, str]
    notice_uri: str | None = None
    """Where a node that saw a spot notice leaves a marker for the others (the shared checkpoint prefix's
    ``_gpulease/cluster/``); None without a bucket."""
    notice_poll_seconds: int = 30
    copy_command: list[str] | None = None
    """The storage CLI's copy of one object (``{src}`` ``{dst}``), for the notice marker."""

    @property
    def rendezvous_host(self) -> str:
        return self.addresses[0]


def fabric_env(fabric: str, instance_type: str) -> dict[str, str]:
    """The fabric's variables for a node of ``instance_type`` (see ``FABRIC_ENV``), with the failure settings."""
    env = {**FAILURE_ENV, **FABRIC_ENV[fabric]}
    if fabric == "efa" and instance_type.startswith(EFA_DEVICE_RDMA_TYPES):
        env["FI_EFA_USE_DEVICE_RDMA"] = "1"
    return env
