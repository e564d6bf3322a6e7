"""The cluster section of an experiment: ``nodes: N`` GPU nodes (``gpu`` describes one of them) and how they meet.

``nodes`` (default 1) is a field of the experiment; the ``cluster`` section holds the rest, which matters only when
``nodes`` is above one: the rendezvous port on rank 0 that ``torchrun`` meets at, the port the watchdogs tell each
other of a spot notice on, how long the nodes wait for each other, and whether the fast fabric (EFA, eRDMA) is
used where the type has one. ``cluster_problems`` holds what a cluster refuses, gathered with the experiment's other
cross-field problems.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from components.spec_rules import Problem
from gpulease.core.model import SpecModel

if TYPE_CHECKING:
    from components.spec.experiment import ExperimentSpec

MAX_NODES = 20
"""The most nodes one stack rents: an Alibaba Cloud LowLatency deployment set holds at most 20 instances (deployment
set overview), and a cluster larger than that is a capacity reservation, not an hourly rental."""


class ClusterSpec(SpecModel):
    """How the nodes of a cluster meet (only read when ``nodes`` is above one)."""

    rendezvous_port: int = Field(
        29500, ge=1024, le=65535, description="The port on rank 0 that torchrun's rendezvous listens on (MASTER_PORT)."
    )
    notice_port: int = Field(
        29400, ge=1024, le=65535,
        description="The port each node's watchdog listens on for a peer's spot notice (private network only).",
    )
    join_timeout_seconds: int = Field(
        900, ge=60, le=7200,
        description="How long the nodes wait for each other: the launcher's wait for rank 0 and torchrun's rendezvous.",
    )
    fabric: Literal["auto", "tcp"] = Field(
        "auto", description="auto: EFA (AWS) or eRDMA (Alibaba Cloud) where the type has it; tcp: plain TCP only."
    )


def cluster_problems(exp: ExperimentSpec) -> list[Problem]:
    """What a cluster cannot do: reattach one disk to every node, run a single-instance phase or bake an image, share
    a port, carry one tag too many."""
    if exp.nodes <= 1:
        return []
    problems: list[Problem] = []
    if exp.data_disk.existing_volume_id is not None:
        problems.append(("dataDisk.existingVolumeId", f"a cluster of {exp.nodes} nodes gives each node a data disk of "
                         "its own, and one disk attaches to one instance; accepted: omit it (or nodes: 1)"))
    if exp.phase != "train":
        problems.append(("phase", f"{exp.phase!r} with nodes: {exp.nodes}: the preparation and parked phases keep one "
                         "instance's data disk, and a cluster's nodes each have their own; accepted: phase: train, or "
                         "nodes: 1"))
    if exp.image.bake:
        problems.append(("image.bake", f"bakes one instance's image, not a cluster of {exp.nodes} nodes; accepted: bake "
                         "it on a single-node stack (nodes: 1) and name that stack in image.fromStack here"))
    if exp.cluster.rendezvous_port == exp.cluster.notice_port:
        problems.append(("cluster.noticePort", f"is the rendezvous port ({exp.cluster.rendezvous_port}); accepted: "
                         "another port, e.g. 29400"))
    rules = exp.rules
    builtin = len(exp._builtin_tags()) + 1  # the node tag (``gpulease:node``) every node's resources carry
    extra = [k for k in exp.tags if k not in exp._builtin_tags()]
    if builtin + len(extra) > rules.max_tags and builtin - 1 + len(extra) <= rules.max_tags:
        problems.append(("tags", f"a cluster's resources carry gpulease's node tag too: {len(extra)} extra tags plus "
                         f"{builtin} exceed the {rules.max_tags} tags {exp.cloud} allows; accepted: at most "
                         f"{rules.max_tags - builtin} tags here"))
    return problems
