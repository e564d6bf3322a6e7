"""What a cloud's lookups decide before anything is registered, and what its builders hand back: the same shapes
on every cloud, so the shared skeleton (``build.py``) reads them without knowing which cloud it builds on."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pulumi

from gpulease.core import vocabulary as v
from gpulease.core.catalog import InstanceType
from gpulease.core.catalog.fabric import Fabric
from gpulease.core.errors import UserError

if TYPE_CHECKING:  # the spec's types only: at run time a cloud folder needs none of the spec's code
    from components.spec.experiment import ExperimentSpec
    from components.spec.sections import SshSpec



@dataclass(frozen=True)
class CloudContext:
    """Facts about the account and region that several builders need, looked up once (a cloud may add its own)."""

    region: str
    account_id: str
    provider: pulumi.ProviderResource | None
    """An explicit provider when the spec's region is not the provider config's; children inherit it."""

    def invoke_opts(self) -> pulumi.InvokeOptions:
        return pulumi.InvokeOptions(provider=self.provider) if self.provider else pulumi.InvokeOptions()


class PlacementError(UserError):
    """No zone or subnet can host the instance type where it must run."""


@dataclass(frozen=True)
class Placement:
    """Where one experiment's instance runs."""

    zone: str
    vpc_id: str | None
    """None: the stack creates the network (Alibaba Cloud, when the spec names no VPC)."""
    subnet_id: str | None
    """The subnet (AWS) or vSwitch (Alibaba Cloud); None: the stack creates one in ``zone``."""


@dataclass(frozen=True)
class ClusterPlacement:
    """A cluster's nodes as the lookups decided them (``nodes`` above one): every node in the experiment's one zone and
    subnet, each with a private address fixed at plan time, so that each node's user-data names rank 0's address (the
    rendezvous) and its peers' (the spot-notice fan-out) before any instance exists."""

    nodes: int
    addresses: tuple[str, ...]
    """Rank order; ``addresses[0]`` is the rendezvous address."""
    fabric: Fabric
    """The type's network between nodes (``gpulease/core/catalog/fabric.yaml``)."""
    fabric_interfaces: int
    """EFA interfaces (AWS) or ERIs (Alibaba Cloud) each node gets: 0 for TCP only."""
    low_latency: bool
    """A cluster placement group (AWS) or LowLatency deployment set (Alibaba Cloud) holds the nodes."""


@dataclass(frozen=True)
class PlacedExperiment:
    """One experiment as the lookups decided it: its instance type (resolved once, from the spec's gpu section),
    its placement and its image (and for a cluster, its nodes)."""

    instance_type: InstanceType
    placement: Placement
    image_id: str
    cluster: ClusterPlacement | None = None


@dataclass(frozen=True)
class StackPlan:
    """Every lookup's answer, before the first resource is registered: a bad type, zone, image or tag fails here
    and nothing is created."""

    context: CloudContext
    bucket: str
    """The checkpoint bucket's name: the spec's existing bucket, or the one the stack creates."""
    tools_bucket: str
    """Where the instance-side tools object goes: the checkpoint bucket the stack creates, else a bootstrap bucket."""
    experiments: dict[str, PlacedExperiment]


@dataclass
class Bucket:
    """A bucket the stack writes to: its name, its ARN (the cloud's resource name for policies) and, when the
    stack created it, the bucket and its settings in the order they are applied (a writer depends on all)."""

    name: str
    arn: str
    settings: list[pulumi.Resource] = field(default_factory=list)

    @property
    def created(self) -> bool:
        """False for an existing bucket the stack only uses (and never changes)."""
        return bool(self.settings)


@dataclass
class DataDisk:
    """The experiment's data disk: created (``resource``) or an existing one reattached (``resource`` None)."""

    id: pulumi.Input[str]
    resource: pulumi.CustomResource | None


@dataclass
class Network:
    """The stack's shared network pieces: the security group, the key pair's name (None without SSH) and the
    subnet or vSwitch each zone's instances use."""

    security_group: pulumi.CustomResource
    key_name: pulumi.Input[str] | None
    subnets: dict[str, pulumi.Input[str]]
    """zone -> subnet / vSwitch id."""


@dataclass(frozen=True)
class SshSource:
    """One address allowed in over SSH: one described rule each, named after the address (a review shows exactly
    which one was added or removed)."""

    rule_name: str
    cidr: str
    ipv6: bool

    @property
    def description(self) -> str:
        return f"SSH from {self.cidr}"


def ssh_sources(name: str, ssh: SshSpec) -> list[SshSource]:
    """The SSH rules a stack's security group gets: one per allowed CIDR (none without SSH)."""
    return [
        SshSource(f"{name}-ssh-{cidr.replace('/', '-').replace(':', '-')}", cidr, ipaddress.ip_network(cidr).version == 6)
        for cidr in ssh.allowed_cidrs
    ]


def security_group_description(name: str, ssh: SshSpec) -> str:
    return f"gpulease {name}: SSH from named addresses only" if ssh.mode == "ssh" else f"gpulease {name}: no inbound"


@dataclass
class ExperimentParts:
    """One experiment while the skeleton builds it: what every per-experiment builder of a cloud needs."""

    spec: ExperimentSpec
    placed: PlacedExperiment
    prefix: str
    """The object prefix it checkpoints under (and under which its tools object lies)."""
    tags: dict[str, pulumi.Input[str]]
    deadline: pulumi.Output[str]
    ctx: CloudContext
    parent: pulumi.Resource
    node: int | None = None
    """A cluster node's rank (None: a single-node experiment, named as before clusters existed)."""

    @property
    def name(self) -> str:
        """The prefix of the resource names: the experiment's, and a cluster node's ``<experiment>-node<rank>``."""
        return self.spec.name if self.node is None else node_name(self.spec.name, self.node)

    def for_node(self, rank: int, nodes: int) -> ExperimentParts:
        """The same experiment as node ``rank`` of ``nodes``: its own names and the node tag on everything it makes."""
        return ExperimentParts(spec=self.spec, placed=self.placed, prefix=self.prefix,
                               tags={**self.tags, v.TAG_NODE: f"{rank}/{nodes}"}, deadline=self.deadline, ctx=self.ctx,
                               parent=self.parent, node=rank)

    def opts(self, **options: object) -> pulumi.ResourceOptions:
        """Options of a child resource: parented to the component (so it inherits its provider), plus ``options``."""
        return pulumi.ResourceOptions(parent=self.parent, **options)  # type: ignore[arg-type]


class OneAfterAnother:
    """Resources applied one after the other, each depending on the one before (a bucket and its settings: a cloud
    may refuse concurrent changes to one resource, and the order matters); ``items`` lists them in order."""

    def __init__(self, first: pulumi.Resource, parent: pulumi.Resource):
        self.items: list[pulumi.Resource] = [first]
        self._parent = parent

    def next_opts(self) -> pulumi.ResourceOptions:
        """Options for the next resource: parented, and waiting for the last one added."""
        return pulumi.ResourceOptions(parent=self._parent, depends_on=[self.items[-1]])

    def add(self, resource: pulumi.Resource) -> None:
        self.items.append(resource)


def node_name(experiment: str, rank: int) -> str:
    return f"{experiment}-node{rank}"


@dataclass
class NodeLaunch:
    """What a cluster node starts with besides a single instance's launch: its rank, its fixed private address, the
    group that keeps the nodes close (placement group name, deployment set id; None without one) and the number of
    fabric interfaces (EFA, ERI) it gets."""

    rank: int
    address: str
    group: pulumi.Input[str] | None
    fabric_interfaces: int


@dataclass
class Launch:
    """What the instance starts with, decided by the skeleton: the shared network, its identity, its user-data and
    what it waits for (the data disk, the bucket fully configured, the tools object and the right to read it)."""

    network: Network
    identity: pulumi.Resource
    user_data: pulumi.Input[str]
    depends_on: list[pulumi.Resource]
    node: NodeLaunch | None = None
    """Set for a cluster node (``components/cluster.py``)."""


@dataclass
class BuiltNode:
    """One node as the skeleton built it, for what needs every node's instance (the cluster's one deadline)."""

    parts: ExperimentParts
    instance: pulumi.CustomResource
    identity: pulumi.Resource
    public_ip: pulumi.Output[str] | None = None
    """Set by the cloud's ``after_nodes`` when the node's public address is not the instance's own (an EFA node's
    Elastic IP)."""


def tools_object_args(bucket: Bucket, key: str, bundle: str) -> dict[str, object]:
    """The tools object as both clouds' object resources take it: the bundle as JSON at ``key``, encrypted with the
    service's key (SSE AES256)."""
    return {"bucket": bucket.name, "key": key, "content": bundle, "content_type": "application/json",
            "server_side_encryption": "AES256"}
