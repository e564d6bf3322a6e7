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


@dataclass(frozen=True)
class SpotRequest:
    id: str
    region: str
    state: str
    instance_id: str | None
    create_time: datetime | None
    tags: dict[str, str]
    kind: str = "spot-request"


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
