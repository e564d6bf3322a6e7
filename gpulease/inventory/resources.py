"""The cloud-neutral records of a listing: what the decisions read, whichever cloud listed them.

Each cloud's listing maps its own answers onto these records and onto one state vocabulary, so that the
sweep's rules are written once (``gpulease.inventory.decide``):

- instance: ``pending``, ``starting``, ``running``, ``stopping``, ``stopped``;
- volume (an EBS volume or an ECS disk): ``available`` means unattached and ready (EC2 ``available``, ECS
  ``Available``); anything else (``creating``, ``in-use``, ``attaching``, ``detaching``, ...) is not;
- snapshot: ``completed`` (EC2 ``completed``, ECS ``accomplished``), ``pending``, ``error``;
- image: ``available`` (ECS ``Available``) or anything else;
- address (an Elastic IP or an EIP): ``available`` when nothing holds it; ``None`` when the cloud reports no
  state (EC2), in which case only the association decides.

``kind`` is the word a report prints; Alibaba Cloud's listing prints its own nouns (``disk``, ``eip``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from gpulease.core.vocabulary import TAG_MANAGED_BY, is_managed


@dataclass(frozen=True)
class Instance:
    id: str
    region: str
    state: str
    instance_type: str
    market: str
    launch_time: datetime | None
    spot_request_id: str | None
    tags: dict[str, str]
    kind: str = "instance"
    release_time: datetime | None = None
    """Alibaba Cloud's ``AutoReleaseTime`` (ECS releases the instance itself then); None when never set."""


GONE_INSTANCE_STATES = ("shutting-down", "terminated", "gone")
"""An instance in one of these states (``gone``: the service no longer knows its id) no longer holds its request."""


RECLAIM_STATUS_CODES = (
    "marked-for-stop",
    "instance-stopped-by-price",
    "instance-stopped-no-capacity",
    "instance-stopped-by-utilization",
)
"""Spot request status codes that say EC2 stopped (or is stopping) the request's instance, not its owner
(https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-request-status.html, "Spot request status codes";
``instance-stopped-by-user`` is the owner's stop)."""


@dataclass(frozen=True)
class SpotRequest:
    """An EC2 spot request, judged by its own tags when they carry ``gpulease:managed-by``, else by its instance's
    (the tags a request carries are set after the instance exists, and may be missing)."""

    id: str
    region: str
    state: str
    instance_id: str | None
    create_time: datetime | None
    tags: dict[str, str]
    kind: str = "spot-request"
    request_type: str = ""
    """``one-time`` or ``persistent`` (DescribeSpotInstanceRequests ``Type``); empty when not read."""
    status_code: str | None = None
    """The request's ``Status.Code``: ``fulfilled``, ``instance-stopped-no-capacity``, ``marked-for-stop``, ..."""
    interruption: str | None = None
    """``InstanceInterruptionBehavior``: ``terminate``, ``stop`` or ``hibernate``."""
    instance_state: str | None = None
    """Its instance's state as described with the request (``gone`` when the id is unknown); None when not read."""
    instance_tags: dict[str, str] = field(default_factory=dict)

    @property
    def deciding_tags(self) -> dict[str, str]:
        """The tags every rule reads: the request's own when they say who manages it, else its instance's."""
        return self.tags if TAG_MANAGED_BY in self.tags else self.instance_tags

    @property
    def managed_by_tags_of(self) -> str | None:
        """Whose tags make it managed: ``request``, ``instance``, or None (not managed)."""
        if not is_managed(self.deciding_tags):
            return None
        return "request" if TAG_MANAGED_BY in self.tags else "instance"

    @property
    def instance_gone(self) -> bool:
        """No instance holds the request any more (never had one, or it is terminated or unknown)."""
        return self.instance_id is None or self.instance_state in GONE_INSTANCE_STATES

    @property
    def stopped_by_reclaim(self) -> bool:
        return self.status_code in RECLAIM_STATUS_CODES

    @property
    def orphaned(self) -> bool:
        """A live persistent request whose instance is gone: EC2 launches a new instance for it."""
        return self.request_type == "persistent" and self.state in ("open", "active", "disabled") and self.instance_gone


@dataclass(frozen=True)
class Volume:
    id: str
    region: str
    state: str
    size_gb: int
    volume_type: str
    attached_to: tuple[str, ...]
    create_time: datetime | None
    tags: dict[str, str]
    kind: str = "volume"
    delete_with_instance: bool | None = None
    """Alibaba Cloud's ``DeleteWithInstance``: False for a data disk meant to outlive its instance."""
    iops: int | None = None
    throughput: int | None = None
    """EBS ``Iops`` and ``Throughput`` (MiB/s) as described: what a gp3/io volume is billed for beyond its size."""


@dataclass(frozen=True)
class Address:
    id: str
    region: str
    public_ip: str
    association_id: str | None
    instance_id: str | None
    tags: dict[str, str]
    kind: str = "address"
    state: str | None = None


@dataclass(frozen=True)
class Snapshot:
    id: str
    region: str
    state: str
    volume_id: str | None
    size_gb: int
    start_time: datetime | None
    tags: dict[str, str]
    kind: str = "snapshot"


@dataclass(frozen=True)
class Image:
    id: str
    region: str
    state: str
    name: str
    create_time: datetime | None
    tags: dict[str, str]
    kind: str = "image"
    snapshot_ids: tuple[str, ...] = ()
    """The snapshots the image's block devices were made into: deleted with the image (AWS)."""
    size_gb: int = 0
    """The size of its block devices (what its snapshots store, at most)."""


@dataclass(frozen=True)
class Bucket:
    id: str
    region: str
    arn: str
    tags: dict[str, str]
    kind: str = "bucket"


Resource = Instance | SpotRequest | Volume | Address | Snapshot | Image | Bucket


@dataclass
class RegionInventory:
    region: str
    instances: list[Instance] = field(default_factory=list)
    spot_requests: list[SpotRequest] = field(default_factory=list)
    volumes: list[Volume] = field(default_factory=list)
    addresses: list[Address] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)
    images: list[Image] = field(default_factory=list)
    buckets: list[Bucket] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    attached_volumes: list[Volume] = field(default_factory=list)
    """Every volume attached to a listed stopped instance, whatever its tags: what the instance still bills for
    (never acted on, so not among ``resources``)."""

    def resources(self) -> list[Resource]:
        return [
            *self.instances,
            *self.spot_requests,
            *self.volumes,
            *self.addresses,
            *self.snapshots,
            *self.images,
            *self.buckets,
        ]
