"""Which region a stack's resources are in, read from their inputs (``region``, zones, ARNs)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

_REGION = re.compile(r"^([a-z]{2}(?:-gov)?-[a-z]+(?:-\d+)?)")


def region_from_zone(zone: str) -> str | None:
    """``us-east-1a`` → ``us-east-1``; ``cn-hangzhou-h`` → ``cn-hangzhou``; ``ap-southeast-1a`` → ``ap-southeast-1``."""
    match = _REGION.match(zone or "")
    return match.group(1) if match else None


_ARN_REGION = re.compile(r"(?:arn:aws[a-z-]*|acs):[a-z0-9-]+:([a-z]{2}(?:-gov)?-[a-z]+(?:-\d+)?):")


def derive_region(inputs: Iterable[Mapping[str, Any]]) -> str | None:
    """The region the inputs name most often: ``region`` inputs first, then availability zones, then ARNs."""
    found: dict[str, Counter[str]] = {"region": Counter(), "zone": Counter(), "arn": Counter()}

    def walk(value: Any, key: str | None, depth: int) -> None:
        if depth > 6:
            return
        if isinstance(value, Mapping):
            for k, child in value.items():
                if k != "tags":
                    walk(child, str(k), depth + 1)
        elif isinstance(value, list):
            for child in value:
                walk(child, key, depth + 1)
        elif isinstance(value, str):
            if key in ("region", "regionId") and _REGION.fullmatch(value):
                found["region"][value] += 1
            elif key in ("availabilityZone", "zoneId") and (region := region_from_zone(value)):
                found["zone"][region] += 1
            elif (match := _ARN_REGION.search(value)) is not None:
                found["arn"][match.group(1)] += 1

    for one in inputs:
        walk(one, None, 0)
    for kind in ("region", "zone", "arn"):
        if found[kind]:
            return found[kind].most_common(1)[0][0]
    return None


REGION_KEYS = ("aws:region", "alicloud:region")
"""The provider config keys that name a stack's region (the default providers read them)."""


def configured_region(config: Mapping[str, Any]) -> str | None:
    """The region a stack's config gives its default provider (``aws:region``, then ``alicloud:region``)."""
    for key in REGION_KEYS:
        value = config.get(key)
        if isinstance(value, str) and value:
            return value
    return None


REGION_KEYS_BY_CLOUD = {"aws": "aws:region", "alicloud": "alicloud:region"}


def configured_regions(config: Mapping[str, Any]) -> dict[str, str]:
    """The region the stack's config gives each cloud's default provider (``{"aws": ..., "alicloud": ...}``): a
    stack may use both clouds, and each resource is priced in its own provider's region."""
    return {cloud: value for cloud, key in REGION_KEYS_BY_CLOUD.items()
            if isinstance(value := config.get(key), str) and value}
