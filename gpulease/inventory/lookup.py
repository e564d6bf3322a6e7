"""The sweep's two-step lookup: the managed resources' deciding tags first (DescribeTags), then a fresh
description of only the resources those tags make candidates (DescribeInstances / DescribeVolumes by id).

DescribeTags filters server-side on resource type and tag key and answers with small rows, so deciding what to
keep costs a few pages however large the fleet; the full description (state, attachments, spot request) is read
only for what may be acted on, right before acting.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from gpulease.core.vocabulary import TAG_EXPIRES_AT, TAG_MANAGED_BY, TAG_PHASE, TAG_RETAIN, TAG_RETAIN_UNTIL, is_managed
from gpulease.inventory.aws import not_found
from gpulease.inventory.collect import (
    FILTER_VALUES_PER_CALL,
    LIVE_INSTANCE_STATES,
    Instance,
    Volume,
    instances_from,
    pages,
    volumes_from,
)
from gpulease.inventory.decide import Tagged  # noqa: F401  (re-exported)

# The tags a sweep decides on; every other tag is read from the fresh description of a candidate.
DECIDING_TAG_KEYS = (TAG_MANAGED_BY, TAG_EXPIRES_AT, TAG_RETAIN, TAG_RETAIN_UNTIL, TAG_PHASE)

# DescribeTags' resource-type values for the kinds looked up this way.
TAG_RESOURCE_TYPES = {"instance": "instance", "volume": "volume"}

TAGS_PAGE = 1000  # DescribeTags' MaxResults ceiling
INSTANCE_IDS_PER_CALL = 1000
VOLUME_IDS_PER_CALL = 500  # DescribeVolumes' page ceiling; ids beyond it are not guaranteed in one answer


@dataclass
class TaggedResources:
    """Managed resources by kind, id -> deciding tags (resources without ``managed-by=gpulease`` are dropped)."""

    by_kind: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)

    def of(self, kind: str) -> dict[str, dict[str, str]]:
        return self.by_kind.get(kind, {})


def managed_tags(ec2: Any, kinds: Iterable[str] = tuple(TAG_RESOURCE_TYPES)) -> TaggedResources:
    """One paged DescribeTags for the deciding tags of every instance and volume; only managed ones are kept."""
    kinds = list(kinds)
    by_type = {TAG_RESOURCE_TYPES[k]: k for k in kinds}
    filters = [
        {"Name": "resource-type", "Values": list(by_type)},
        {"Name": "key", "Values": list(DECIDING_TAG_KEYS)},
    ]
    raw: dict[str, dict[str, dict[str, str]]] = {k: {} for k in kinds}
    paginator = ec2.get_paginator("describe_tags")
    for page in paginator.paginate(Filters=filters, PaginationConfig={"PageSize": TAGS_PAGE}):
        for row in page.get("Tags", []):
            kind = by_type.get(row.get("ResourceType", ""))
            rid = row.get("ResourceId")
            if kind is None or not rid or row.get("Key") not in DECIDING_TAG_KEYS:
                continue
            raw[kind].setdefault(rid, {})[row["Key"]] = row.get("Value", "")
    return TaggedResources({kind: {rid: t for rid, t in ids.items() if is_managed(t)} for kind, ids in raw.items()})


def _chunks(ids: list[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


def _describe(
    ec2: Any, operation: str, key: str, id_param: str, id_filter: str, ids: list[str], size: int, filters: list[dict]
) -> list[dict]:
    """Describe ``ids`` ``size`` at a time. When one of them no longer exists the whole call fails with a NotFound
    error, so that batch is asked again through the id filter, which simply leaves missing ids out."""
    items: list[dict] = []
    for chunk in _chunks(sorted(set(ids)), size):
        params: dict[str, Any] = {id_param: chunk}
        if filters:
            params["Filters"] = filters
        try:
            # No page size: EC2 refuses MaxResults together with explicit ids and answers for all of them.
            for page in ec2.get_paginator(operation).paginate(**params):
                items.extend(page.get(key, []))
        except ClientError as exc:
            if not not_found(exc):
                raise
            for sub in _chunks(chunk, FILTER_VALUES_PER_CALL):
                items.extend(pages(ec2, operation, key, Filters=[{"Name": id_filter, "Values": sub}, *filters]))
    return items


def describe_instances(ec2: Any, region: str, ids: list[str]) -> list[Instance]:
    """The live (pending, running, stopping, stopped), still managed instances among ``ids``, freshly described."""
    state = [{"Name": "instance-state-name", "Values": LIVE_INSTANCE_STATES}]
    raw = _describe(
        ec2, "describe_instances", "Reservations", "InstanceIds", "instance-id", ids, INSTANCE_IDS_PER_CALL, state
    )
    return instances_from(raw, region)


def describe_volumes(ec2: Any, region: str, ids: list[str]) -> list[Volume]:
    """The still existing, still managed volumes among ``ids``, freshly described (full tags, state, attachments)."""
    raw = _describe(ec2, "describe_volumes", "Volumes", "VolumeIds", "volume-id", ids, VOLUME_IDS_PER_CALL, [])
    return volumes_from(raw, region)
