"""The cloud contract: what a cloud folder provides so that one skeleton (``build.py``) builds a stack on it.

A cloud is one folder, ``components/<cloud>/``, with the same files as every other (``spec.py`` what the spec
accepts, ``context.py`` the account facts, ``network.py``, ``storage.py``, ``identity.py``, ``instance.py``,
``lifetime.py``) and a ``cloud.py`` whose class implements this contract; adding a cloud is that folder plus one
line in ``components.experiment.CLOUDS`` (and one in ``components.spec.clouds``, the spec's list).

The skeleton calls the stubs below in a fixed order: first every lookup (``prepare`` in ``build.py``:
``lookup_context``, ``resolve_network``, per experiment ``existing_disk_zone``, ``place``, ``resolve_image``,
``check_tags``, then ``check_placements``), so that a bad type, zone, image or tag registers nothing; then the
resources (``create_network``, ``create_security_group``, ``create_key_pair``, ``create_bucket`` /
``create_bootstrap_bucket``, per experiment ``create_data_disk``, ``create_identity``, ``upload_tools`` and
``allow_tools_read``, ``create_instance``, ``attach_data_disk``, ``after_instance``). The per-experiment stubs get
an ``ExperimentParts``: the experiment's spec, placement, prefix, tags, deadline, context and parent. Each stub says what it must guarantee; how the cloud gives each of the
kit's guarantees, or why it cannot, is its ``capabilities`` table (``GUARANTEES`` below), which the parity test
and the documentation's clouds table are built from.

A cluster (``nodes: N``, ``components/cluster.py``) is N instances built by the same per-experiment stubs, one
``ExperimentParts`` per node (``parts.node`` its rank: its own resource names and the ``gpulease:node`` tag), so a
single-node stack is built exactly as before. A cluster adds four stubs: ``plan_cluster`` (lookup time: the nodes'
fixed addresses in the one subnet, the fabric), ``allow_cluster_traffic`` (the group admits its own members),
``create_cluster_group`` (placement group / deployment set) and ``after_nodes`` (one deadline for every node); a
cloud that builds no clusters refuses in ``plan_cluster`` before anything is registered. ``Launch.node`` tells
``create_instance`` a node's rank, address, group and fabric interfaces.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import pulumi

from components.plan import (
    Bucket,
    BuiltNode,
    CloudContext,
    ClusterPlacement,
    DataDisk,
    ExperimentParts,
    Launch,
    PlacedExperiment,
    Placement,
    PlacementError,
    SshSource,
)
from components.spec_rules import CloudSpecRules

if TYPE_CHECKING:  # the spec's types only: at run time a cloud folder needs none of the spec's code
    from components.spec.experiment import ExperimentSpec
    from components.spec.load import StackSpec
    from gpulease.core.catalog import InstanceType



@dataclass(frozen=True)
class Guarantee:
    key: str
    title: str


GUARANTEES: tuple[Guarantee, ...] = (
    Guarantee("ssh-scope", "SSH scope"),
    Guarantee("no-inbound", "No inbound at all"),
    Guarantee("spot", "Spot"),
    Guarantee("spot-recovery", "Spot recovery"),
    Guarantee("deadline", "Deadline (outside the instance)"),
    Guarantee("shutdown-from-inside", "Shutdown from inside"),
    Guarantee("metadata", "Metadata service"),
    Guarantee("encryption", "Encryption"),
    Guarantee("retention", "Retention"),
    Guarantee("lifecycle", "Lifecycle"),
    Guarantee("noncurrent-versions-kept", "Noncurrent versions kept"),
    Guarantee("tags", "Tags"),
    Guarantee("storage-access", "Least-privilege storage access"),
    Guarantee("network", "Network"),
    Guarantee("replacement", "Replacement"),
    Guarantee("nvidia-driver", "NVIDIA driver"),
    Guarantee("budget-alerts", "Budget alerts"),
    Guarantee("cluster", "Multi-node cluster (`nodes`)"),
)
"""What every stack gets, in the order the clouds table lists them."""


@dataclass(frozen=True)
class Support:
    """How a cloud gives a guarantee (``how``), and what it cannot give and why (``gap``, None when nothing)."""

    how: str
    gap: str | None = None
    given: bool = True
    """False when the cloud cannot give the guarantee at all (its facts differ from the other clouds')."""


class Cloud(ABC):
    """One cloud's implementation of the contract; ``components/<cloud>/cloud.py`` subclasses it once."""

    name: ClassVar[str]
    """The spec's ``cloud`` value, the provider's config namespace (``aws:region``) and the component type's middle
    part (``gpulease:aws:GpuExperiment``)."""
    spec: ClassVar[CloudSpecRules]
    """What the spec accepts on this cloud (``components/<cloud>/spec.py``)."""
    capabilities: ClassVar[Mapping[str, Support]]
    """Guarantee key -> how this cloud gives it; every key of ``GUARANTEES``."""

    # --- lookups, before anything is registered ------------------------------------------------------------

    @abstractmethod
    def provider(self, region: str) -> pulumi.ProviderResource:
        """An explicit provider for ``region`` (the spec names a region other than the provider's config)."""

    @abstractmethod
    def lookup_context(self, region: str, provider: pulumi.ProviderResource | None) -> CloudContext:
        """The account and region facts (account id, partition...), one lookup each."""

    @abstractmethod
    def resolve_network(self, base: ExperimentSpec, ctx: CloudContext) -> str | None:
        """The VPC every run shares, when the cloud decides it per stack (None: decided per placement)."""

    @abstractmethod
    def existing_disk_zone(self, disk_id: str, ctx: CloudContext) -> str:
        """The zone of a data disk to reattach (a user error when it does not exist)."""

    @abstractmethod
    def place(
        self, exp: ExperimentSpec, instance_type: str, vpc_id: str | None, ctx: CloudContext, required_zone: str | None
    ) -> Placement:
        """The zone and subnet for the instance: a zone that offers the type (and holds the disk to reattach)."""

    @abstractmethod
    def resolve_image(self, exp: ExperimentSpec, family_name: str, instance_type: str, ctx: CloudContext) -> str:
        """The newest image of ``family_name`` (one of the cloud's ``spec.image_families``) that runs the instance type
        (a pinned ``image.id`` is used as it is, without a lookup)."""

    def check_tags(self, exp: ExperimentSpec, stack: str, checkpoint_uri: str) -> None:
        """Refuse a tag set the cloud would refuse, computed values included (nothing to check by default)."""
        return None

    def check_placements(self, spec: StackSpec, placed: Mapping[str, PlacedExperiment]) -> None:
        """Refuse placements the shared resources cannot serve together (nothing to check by default)."""
        return None

    # --- what every stack shares ---------------------------------------------------------------------------

    def tagged(self, tags: dict[str, pulumi.Input[str]], *, stack: str, what: str) -> dict[str, pulumi.Input[str]]:
        """The tags as the cloud takes them, checked where the cloud has stricter rules (unchanged by default)."""
        return tags

    def bucket_uri(self, bucket: str, prefix: str) -> str:
        """The checkpoint URI the instance syncs to (``s3://bucket/prefix``)."""
        return f"{self.spec.bucket_scheme}{bucket}/{prefix}"

    @abstractmethod
    def create_network(
        self, name: str, placements: Mapping[str, Placement], tags: dict, parent: pulumi.Resource
    ) -> tuple[pulumi.Input[str], dict[str, pulumi.Input[str]]]:
        """The VPC the runs share and a subnet for every zone they were placed in: the ones the lookups found, or
        created (only where the lookups found none)."""

    @abstractmethod
    def create_security_group(
        self, name: str, description: str, sources: list[SshSource], vpc_id: pulumi.Input[str], tags: dict,
        parent: pulumi.Resource,
    ) -> pulumi.CustomResource:
        """A security group admitting SSH from ``sources`` only (one described rule each; none: no inbound at all),
        all outbound open (packages, images, checkpoints)."""

    @abstractmethod
    def create_key_pair(self, name: str, public_key: str, tags: dict, parent: pulumi.Resource) -> pulumi.Input[str]:
        """A key pair from the user's public key; its name."""

    @abstractmethod
    def bucket_arn(self, bucket: str, ctx: CloudContext) -> str:
        """The bucket's name in the cloud's access policies (an existing bucket is used by this name only)."""

    @abstractmethod
    def create_bucket(
        self, name: str, bucket: str, spec: ExperimentSpec, tags: dict, ctx: CloudContext, parent: pulumi.Resource
    ) -> Bucket:
        """The checkpoint bucket the stack creates: private, encrypted, versioned, TLS-only, with the spec's
        lifecycle rules, retained unless the spec says otherwise."""

    @abstractmethod
    def create_bootstrap_bucket(
        self, name: str, bucket: str, tags: dict, ctx: CloudContext, parent: pulumi.Resource
    ) -> Bucket:
        """A bucket for the kit's own tools only (the stack has no checkpoint bucket of its own): private,
        encrypted, TLS-only, removed with the stack."""

    # --- per experiment ------------------------------------------------------------------------------------

    @abstractmethod
    def create_data_disk(self, exp: ExperimentParts, tags: dict) -> DataDisk:
        """The encrypted data disk in the experiment's zone that outlives the instance (retained unless the spec
        says otherwise); or the existing disk to reattach, never managed."""

    @abstractmethod
    def create_identity(self, exp: ExperimentParts, bucket: Bucket | None) -> pulumi.Resource:
        """What the instance's credentials come from: read and write under its checkpoint prefix only (nothing in
        storage without a bucket), plus the cloud's session agent's rights where the spec asks for them."""

    @abstractmethod
    def upload_tools(self, exp: ExperimentParts, bucket: Bucket, key: str, bundle: str) -> pulumi.Resource:
        """The tools bundle as one private, encrypted object at ``key``, after the bucket is fully configured."""

    @abstractmethod
    def allow_tools_read(self, exp: ExperimentParts, identity: pulumi.Resource, bucket: Bucket, key: str) -> pulumi.Resource:
        """Let the instance read that one object, nothing else in the bucket (when it is not its own bucket)."""

    @abstractmethod
    def create_instance(self, exp: ExperimentParts, launch: Launch) -> pulumi.CustomResource:
        """The GPU instance: the market the spec asks for (spot released, never stopped, on interruption), token-
        only metadata, an encrypted system disk, the deadline enforced by the cloud where it keeps it on the
        instance, delete-before-replace, and a newer family image never replacing it."""

    @abstractmethod
    def attach_data_disk(self, exp: ExperimentParts, disk: DataDisk, instance: pulumi.CustomResource) -> pulumi.Resource:
        """Attach the disk; destroying the stack never force-detaches a mounted disk."""

    @abstractmethod
    def after_instance(self, exp: ExperimentParts, instance: pulumi.CustomResource, identity: pulumi.Resource) -> None:
        """What needs the instance's id: the deadline outside the instance where the cloud keeps it apart, and
        any permission naming the instance."""

    # --- the workflow before training (``components/<cloud>/workflow.py``) ---------------------------------

    @abstractmethod
    def allow_staging(self, exp: ExperimentParts, identity: pulumi.Resource) -> None:
        """Let the instance read its data sources' bucket prefixes and its hub token's one secret (nothing when the
        spec names neither)."""

    @abstractmethod
    def ready_instances(
        self, exp: ExperimentParts, bucket: str, instance: pulumi.CustomResource, folder: str
    ) -> pulumi.Output[list[str]]:
        """The names of the records under the key prefix ``folder``, listed by a data source once ``instance``
        exists: ``components.image_bake.ready_folder`` (the instances whose readiness passed) or ``baked_folder``
        (the experiments whose image was baked)."""

    @abstractmethod
    def bake_image(
        self, exp: ExperimentParts, instance: pulumi.CustomResource, ready: pulumi.Output[list[str]], record_uri: str,
        name: str, tags: dict, bucket: str = "",
    ) -> pulumi.CustomResource:
        """An encrypted image of the instance's system disk only, made once and retained on destroy, declared only
        from an instance in ``ready`` (``components.image_bake.gate``), then the baked record in ``bucket``
        (``components.image_bake.baked_key``): the image resource (its ``id`` and its recorded ``tags``)."""

    def create_budget_alert(self, name: str, spec: ExperimentSpec, stack: str, tags: dict,
                            parent: pulumi.Resource) -> pulumi.Resource | None:
        """The stack's budget with e-mail alerts at ``spec.budget_alerts`` thresholds of ``spec.budget_usd``
        (actual and forecast), filtered by the stack's cost-allocation tag; None where the provider has no budget
        service (the ``budget-alerts`` row of ``capabilities`` says so, and the watchdog's estimate warns)."""
        return None

    @abstractmethod
    def session_command(self, instance_id: str, region: str) -> str:
        """How to reach an instance that opens no inbound port (the ``sshCommand`` output in the session mode)."""

    # --- a cluster: ``nodes`` above one (components/cluster.py) --------------------------------------------------
    # An experiment with ``nodes: N`` is N instances built by the per-experiment stubs above, one ``ExperimentParts``
    # per node (``parts.node`` its rank, its own resource names, the node tag); the stubs below are what a cluster
    # adds. A cloud that builds no clusters keeps the defaults: ``plan_cluster`` refuses, before anything exists.

    def plan_cluster(
        self, exp: ExperimentSpec, instance_type: InstanceType, placement: Placement, ctx: CloudContext
    ) -> ClusterPlacement:
        """Lookup time: every node's private address in the placement's one subnet (fixed now: each node's user-data
        names rank 0's as the rendezvous), the fabric the nodes get (``gpulease/core/catalog/fabric.yaml``) and
        whether a low-latency group holds them; a subnet that cannot hold them is a ``PlacementError``."""
        raise PlacementError(f"nodes: {exp.nodes} nodes are not built on {self.name}; accepted: nodes: 1")

    def allow_cluster_traffic(self, name: str, security_group: pulumi.CustomResource, tags: dict,
                              parent: pulumi.Resource) -> None:
        """All traffic between the members of the stack's security group (what EFA and NCCL need), nothing else."""
        raise NotImplementedError

    def create_cluster_group(self, exp: ExperimentParts) -> pulumi.Input[str] | None:
        """What keeps the nodes close (a cluster placement group, a LowLatency deployment set), or None."""
        return None

    def after_nodes(self, exp: ExperimentParts, nodes: list[BuiltNode]) -> None:
        """What needs every node's instance: one deadline for all of them. By default each node's ``after_instance``
        (a cloud that keeps the deadline on the instance gives every node the same one)."""
        for node in nodes:
            self.after_instance(node.parts, node.instance, node.identity)


def capability_table(clouds: Mapping[str, Cloud]) -> str:
    """The clouds table of the documentation, from the clouds' ``capabilities``: per guarantee, how each cloud
    gives it and, in the last column, what one cannot give and why (``—`` when nothing)."""
    names = list(clouds)
    lines = [
        "| guarantee | " + " | ".join(clouds[n].spec.title for n in names) + " | gaps and why |",
        "| --- | " + " | ".join("---" for _ in names) + " | --- |",
    ]
    for guarantee in GUARANTEES:
        supports = [clouds[n].capabilities[guarantee.key] for n in names]
        gaps = " ".join(s.gap for s in supports if s.gap) or "—"
        lines.append(f"| {guarantee.title} | " + " | ".join(s.how for s in supports) + f" | {gaps} |")
    return "\n".join(lines) + "\n"
