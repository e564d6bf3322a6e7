"""The stack's region, checked against its cloud's region names before anything looks a price or an image up: a
typo (``us-west2``) is named as an unknown region with the nearest valid one, not as "no instance type fits"."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.spec.clouds import SPEC_RULES
from components.spec.suggest import nearest
from gpulease.core.validation_words import a_or_an, kind_of

PROVIDER_REGION_KEYS = {name: f"{name}:region" for name in SPEC_RULES}
"""The provider config key of each cloud's region (``aws:region``, ``alicloud:region``)."""


def region_problems(cloud: str, region: str | None, config: Mapping[str, Any], prefix: str,
                    cloud_setting: str = "cloud: ", owner: str = "this stack's cloud") -> list[tuple[str, str]]:
    """The problem with the stack's region (the spec's ``region``, else the provider's config key), if any;
    ``cloud_setting``/``owner``: how the message names the setting that picks the cloud (a flag for a command)."""
    rules = SPEC_RULES[cloud]
    key = PROVIDER_REGION_KEYS[cloud]
    field, value = (f"{prefix}.region", region) if region is not None else (key, config.get(key))
    if value is None:
        return []
    example = "us-west-2" if cloud == "aws" else "cn-hangzhou"
    if not isinstance(value, str):
        return [(field, f"{value!r} is {kind_of(value)}; accepted: {a_or_an(rules.title)} region name, e.g. {example}")]
    if value in rules.regions:
        return []
    for name, other in SPEC_RULES.items():
        if name != cloud and value in other.regions:
            default = f" ({cloud_setting.rstrip(': ')} defaults to aws)" if cloud == "aws" else ""
            return [(field, f"{value!r} is {a_or_an(other.title)} region, and {owner} is {cloud}{default}; "
                     f"accepted: {cloud_setting}{name} to use it, or {a_or_an(rules.title)} region, e.g. {example}")]
    guess = nearest(value, rules.regions)
    near = f" (did you mean {guess}?)" if guess else ""
    return [(field, f"{value!r} is not {a_or_an(rules.title)} region{near}; accepted: {a_or_an(rules.title)} region, e.g. "
             f"{guess or example} (the list is in components/{cloud}/spec.py)")]
