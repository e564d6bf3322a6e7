"""What a cloud accepts in a stack's spec: the shape every cloud's ``spec.py`` fills in (no Pulumi here).

The spec is cloud-neutral; each cloud folder says, in its own ``spec.py``, which disk types, image families,
storage classes, ids, key types and limits it accepts (with their sources), and what else it refuses. The
experiment's validation asks the stack's cloud through this interface, so a question such as "which disk types
does Alibaba Cloud take?" has one answer, in ``components/alicloud/spec.py``.

Each check returns ``(field path, message)`` problems in the spec's camelCase, or nothing. What cannot be checked
without a cloud (a raised account quota, capacity in a zone) is left to the cloud.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from components.spec.experiment import ExperimentSpec

Problem = tuple[str, str]

BUCKET_NAME_MAX = 63
"""S3 and OSS bucket names are 3-63 characters; a generated name may use all of them."""
BOOT_MINUTES = 10
"""Time to boot and mount before the watchdog's final-sync window may begin."""


class CloudSpecRules(ABC):
    """One cloud's answers; a subclass sets every attribute and implements the checks."""

    name: ClassVar[str]
    """The spec's ``cloud`` value and the provider's config namespace (``aws:region``)."""
    title: ClassVar[str]
    """The cloud's name in messages (AWS, Alibaba Cloud)."""
    session_mode: ClassVar[str]
    """The ``ssh.mode`` that opens no inbound port and reaches the instance through the cloud's agent."""
    session_what: ClassVar[str]
    """What that mode is, for a stack on another cloud that names it."""
    disk_types: ClassVar[tuple[str, ...]]
    default_disk_type: ClassVar[str]
    storage_classes: ClassVar[tuple[str, ...]]
    """Lifecycle transition targets of the cloud's object storage."""
    image_families: ClassVar[Mapping[str, Mapping[str, Any]]]
    """Image families resolved by a lookup to the newest image: the lookup's filters and ``nvidia_driver``
    (``preinstalled`` or ``absent``). The one definition: the spec accepts its keys, the instance looks them up."""
    default_image_family: ClassVar[str]
    disk_id: ClassVar[re.Pattern[str]]
    disk_id_example: ClassVar[str]
    image_id: ClassVar[re.Pattern[str] | None]
    """The shape of an image id, where the cloud has one the spec can check (None: any text)."""
    image_id_what: ClassVar[str] = "an image id"
    image_id_example: ClassVar[str] = ""
    key_types: ClassVar[tuple[str, ...]]
    """OpenSSH key types the cloud's key-pair import accepts."""
    key_example: ClassVar[str]
    max_tags: ClassVar[int]
    tag_value_max: ClassVar[int]
    bucket_scheme: ClassVar[str]
    """The checkpoint URI's scheme (``s3://``)."""
    regions: ClassVar[tuple[str, ...]]
    """The cloud's region names (a region outside them is a typo or a region the kit does not know)."""
    transition_min_days: ClassVar[Mapping[str, int]] = {}
    """The fewest days after creation the cloud accepts for a lifecycle transition to a storage class."""
    min_runtime_minutes: ClassVar[int]
    short_runtime_reason: ClassVar[str]
    min_deadline_lead_minutes: ClassVar[int]
    """How far away an explicit ``expiresAt`` must be at least."""

    @abstractmethod
    def disk_problems(
        self, disk_type: str, size_gb: int, iops: int | None, throughput: int | None, performance_level: str | None
    ) -> list[Problem]:
        """What the cloud refuses in a new data disk of this type (sizes, IOPS, throughput, performance level)."""

    @abstractmethod
    def cidr_count_problems(self, cidrs: list[str]) -> list[Problem]:
        """Whether the SSH rules fit the cloud's security group."""

    def extra_problems(self, spec: ExperimentSpec) -> list[Problem]:
        """Anything else the cloud cannot do as asked (checked last among the tag checks); nothing by default."""
        return []

    def nvidia_driver(self, family: str | None) -> str:
        """``preinstalled`` or ``absent`` for a family image; ``unknown`` for a pinned ``image.id`` (readiness)."""
        return str(self.image_families[family]["nvidia_driver"]) if family else "unknown"

    def key_problem(self, declared: str) -> str | None:
        """Why the cloud's key-pair import would refuse a key of type ``declared``, or None."""
        if declared in self.key_types:
            return None
        return (f"{declared} keys are refused by {self.title}'s ImportKeyPair; "
                f"accepted on {self.name}: {', '.join(self.key_types)}, e.g. '{self.key_example}'")

    def checkpoint_uri_length(self, bucket: str | None, prefix: str, name: str) -> int:
        """The longest checkpoint URI tag value this experiment can get: ``s3://bucket/prefix[name/]`` (a sweep
        adds the run's name), with a generated bucket name counted at its maximum length."""
        return len(self.bucket_scheme) + (len(bucket) if bucket else BUCKET_NAME_MAX) + 1 + len(prefix) + len(name) + 1

    def runtime_problems(self, max_runtime_hours: float, final_sync_minutes: int, explicit_deadline: bool,
                         field: str = "maxRuntimeHours") -> list[Problem]:
        minutes = max_runtime_hours * 60
        floor = self.min_runtime_minutes
        if not explicit_deadline and minutes < floor:
            return [(field, f"{max_runtime_hours:g} h is too short: {self.short_runtime_reason}; accepted on "
                     f"{self.name}: {floor / 60:g} or more")]
        if minutes < final_sync_minutes + BOOT_MINUTES:
            return [(field, f"{max_runtime_hours:g} h leaves no time to train: the watchdog starts the final "
                     f"sync watchdog.finalSyncMinutes ({final_sync_minutes}) before the deadline, after about "
                     f"{BOOT_MINUTES} minutes of boot; accepted: at least {(final_sync_minutes + BOOT_MINUTES) / 60:.2f} h, "
                     "or a smaller finalSyncMinutes")]
        return []
