"""What every rule needs: unknown-safe property access, tags, ports, time (type tokens: ``gpulease.core.resources``).

Properties reach a rule through ``pulumi_policy``'s unknown-checking proxy: reading a value that is not known
during ``pulumi preview`` raises ``UnknownValueError`` and the whole rule is reported as "can't run during
preview". ``known`` and ``tags_of`` catch that for single values so a rule can judge what is known and skip
only what is not.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyConfigSchema
from pulumi_policy.proxy import UnknownValueError

from gpulease.core import clock
from gpulease.core import resources as rt
from gpulease.core import vocabulary as v


class _Unknown:
    """A value that cannot be known during preview."""

    def __repr__(self) -> str:
        return "<unknown>"

    def __bool__(self) -> bool:
        return False


UNKNOWN = _Unknown()


def level(name: str) -> EnforcementLevel:
    return EnforcementLevel(name)


def judges(policy: Any, types: Iterable[str] | Callable[[str], bool]) -> Any:
    """Declare the resource types a rule reads (its own type checks stay the authority).

    ``gpulease plan`` hands a resource rule only resources of these types, and a stack rule a stack of only
    these types, which spares the analyzer from deserializing every resource once per rule; under
    ``pulumi preview`` every rule sees everything and skips the other types itself, with the same verdicts."""
    policy.resource_types = types if callable(types) else frozenset(types)
    return policy


def schema(properties: dict[str, dict[str, Any]]) -> PolicyConfigSchema:
    """A config schema; every property carries a ``default`` so the docs and the engine agree on it."""
    return PolicyConfigSchema(properties=properties)


def config_value(config: Mapping[str, Any], key: str, default: Any) -> Any:
    """A policy config value; the engine fills schema defaults, direct callers may pass nothing."""
    value = config.get(key) if config else None
    return default if value is None else value


def known(props: Any, *path: str | int, default: Any = None) -> Any:
    """``props[path...]``; ``default`` when absent, ``UNKNOWN`` when not known during preview."""
    value = props
    try:
        for key in path:
            if isinstance(key, int):
                if not isinstance(value, Sequence) or isinstance(value, str) or key >= len(value):
                    return default
                value = value[key]
            else:
                if not isinstance(value, Mapping) or key not in value:
                    return default
                value = value[key]
    except UnknownValueError:
        return UNKNOWN
    return default if value is None else value


def items(props: Any, *path: str) -> list[Any]:
    """A list property as a list of elements (``UNKNOWN`` elements kept as such); [] when absent or unknown."""
    value = known(props, *path, default=[])
    if value is UNKNOWN or not isinstance(value, Sequence) or isinstance(value, str):
        return []
    return [known(value, i) for i in range(len(value))]


def tags_of(props: Any, provider: Any = None) -> dict[str, Any]:
    """A resource's tags, over its AWS provider's ``default_tags`` when the provider is known; a value not known
    during preview is ``UNKNOWN``; no tags at all is {}."""
    tags: dict[str, Any] = {}
    if provider is not None and getattr(provider, "resource_type", "") == "pulumi:providers:aws":
        defaults = known(provider.props, "defaultTags", "tags", default={})
        if isinstance(defaults, Mapping):
            tags.update({k: known(defaults, k) for k in defaults})
    raw = known(props, "tags", default={})
    if raw is not UNKNOWN and isinstance(raw, Mapping):
        tags.update({k: known(raw, k) for k in raw})
    return tags


def now() -> datetime:
    """The shared clock (``gpulease.core.clock``), so an offline review can judge at the moment it rendered."""
    return clock.utcnow()


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return v.parse_rfc3339(value)
    except ValueError:
        return None


def is_gpu(props: Any) -> bool:
    itype = known(props, "instanceType")
    return isinstance(itype, str) and v.is_gpu_instance_type(itype)


def is_spot(resource_type: str, props: Any) -> bool | None:
    """Whether an instance runs on spot; None when not known during preview."""
    if resource_type == rt.AWS_SPOT_REQUEST:
        return True
    if resource_type in (rt.AWS_INSTANCE, rt.AWS_LAUNCH_TEMPLATE):
        market = known(props, "instanceMarketOptions", "marketType")
        return None if market is UNKNOWN else market == "spot"
    if resource_type == rt.ALI_INSTANCE:
        strategy = known(props, "spotStrategy", default="NoSpot")
        return None if strategy is UNKNOWN else strategy not in ("", "NoSpot")
    return False


def checkpoint_bucket(uri: Any) -> tuple[str, str] | None:
    """``(scheme, bucket)`` of an ``s3://bucket/prefix`` or ``oss://bucket/prefix`` URI."""
    if not isinstance(uri, str):
        return None
    match = re.match(r"^(s3|oss)://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(/.*)?$", uri)
    return (match.group(1), match.group(2)) if match else None


def port_range_covers(low: float | None, high: float | None, ports: Iterable[int]) -> list[int]:
    """Which of ``ports`` fall in ``[low, high]``; a missing bound means every port."""
    lo = -1 if low is None else low
    hi = 65535 if high is None else high
    if lo == -1 and hi == -1:  # "-1/-1" and protocol -1 mean every port
        lo, hi = 0, 65535
    return [p for p in ports if lo <= p <= hi]


def broad_cidr(cidr: Any, min_v4: int, min_v6: int) -> str | None:
    """Why ``cidr`` counts as open to the internet ("the whole internet", "a /8"), or None."""
    if not isinstance(cidr, str):
        return None
    try:
        net = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return None
    minimum = min_v4 if net.version == 4 else min_v6
    if net.prefixlen == 0:
        return "the whole internet"
    if net.prefixlen < minimum:
        return f"a /{net.prefixlen} (more than a /{minimum})"
    return None


def display(resource_type: str, name: str) -> str:
    return f"{resource_type.split(':')[-1]} {name!r}"
