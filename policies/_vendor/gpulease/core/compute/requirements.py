"""Attribute-based instance type selection: what an ``instanceRequirements`` block lets EC2 launch.

A launch template, an autoscaling group's overrides, an EC2 Fleet or a spot fleet request (and their
``pulumi_aws_native`` twins) may name no instance type at all and give attributes instead; EC2 then picks any
type that matches (https://docs.aws.amazon.com/autoscaling/ec2/userguide/create-mixed-instances-group-attribute-based-instance-type-selection.html).
``accelerator_request`` says what in such a block asks for accelerators (judged as GPU compute of a type not
known); ``open_selection`` says when a block lets EC2 pick accelerated types without asking for them: the
accelerator count has no limits unless set, and only ``acceleratorCount.max`` 0 excludes accelerator-enabled
types (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_AcceleratorCountRequest.html, "To exclude
accelerator-enabled instance types, set Max to 0"; the default, "No minimum or maximum limits",
https://docs.aws.amazon.com/sdk-for-kotlin/api/latest/ec2/aws.sdk.kotlin.services.ec2.model/-instance-requirements/accelerator-count.html).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from gpulease.core.compute.accelerators import is_accelerated_family
from gpulease.core.compute.paths import UNKNOWN, number

KEY = "instanceRequirements"
ACCELERATOR_KINDS = frozenset({"gpu", "fpga", "inference"})
"""``acceleratorTypes`` values (EC2 ``InstanceRequirements.AcceleratorTypes``)."""
ACCELERATED_INITIALS = ("p", "g", "f", "inf", "trn", "dl", "vt")
"""The leading letters of EC2's accelerated families (p4d, g5, f1, inf2, trn1, dl1, vt1): a wildcard whose text
before the ``*`` could begin one of them may match GPU types."""
MAX_DEPTH = 8


def blocks(props: Any, depth: int = 0) -> Iterator[Mapping[str, Any]]:
    """Every ``instanceRequirements`` mapping in ``props`` (an override's, a launch template's)."""
    if depth > MAX_DEPTH:
        return
    if isinstance(props, Mapping):
        for key, value in props.items():
            if key == KEY and isinstance(value, Mapping):
                yield value
            elif isinstance(value, Mapping | list):
                yield from blocks(value, depth + 1)
    elif isinstance(props, list):
        for value in props:
            yield from blocks(value, depth + 1)


def _bound(block: Mapping[str, Any], key: str, end: str) -> Any:
    limits = block.get(key)
    return number(limits.get(end)) if isinstance(limits, Mapping) else None


def _texts(value: Any) -> list[str]:
    return [v.strip().lower() for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _accelerated_pattern(pattern: str) -> bool:
    """Whether an ``allowedInstanceTypes`` entry (``p4d.*``, ``g5*``, ``*``) may match an accelerated type."""
    literal = pattern.split("*", 1)[0].split("?", 1)[0]
    if is_accelerated_family(literal.rstrip(".")):
        return True
    if literal == pattern:
        return False
    family = literal.split(".", 1)[0]
    return bool(family) and "." not in literal and any(i.startswith(family) or family.startswith(i) for i in ACCELERATED_INITIALS)


def _request(block: Mapping[str, Any]) -> str | None:
    if _bound(block, "acceleratorCount", "max") == 0:
        return None
    least = _bound(block, "acceleratorCount", "min")
    if isinstance(least, float) and least >= 1:
        return f"{KEY}.acceleratorCount.min={least:g}"
    if kinds := [k for k in _texts(block.get("acceleratorTypes")) if k in ACCELERATOR_KINDS]:
        return f"{KEY}.acceleratorTypes {kinds}"
    for key in ("acceleratorManufacturers", "acceleratorNames"):
        if names := _texts(block.get(key)):
            return f"{KEY}.{key} {names}"
    memory = _bound(block, "acceleratorTotalMemoryMib", "min")
    if isinstance(memory, float) and memory >= 1:
        return f"{KEY}.acceleratorTotalMemoryMib.min={memory:g}"
    if patterns := [p for p in _texts(block.get("allowedInstanceTypes")) if _accelerated_pattern(p)]:
        return f"{KEY}.allowedInstanceTypes {patterns}"
    return None


def accelerator_request(props: Any) -> str | None:
    """What in ``props``'s attribute-based selection asks for (or allows by name) accelerators; None for none."""
    return next((found for block in blocks(props) if (found := _request(block))), None)


def open_selection(props: Any) -> str | None:
    """Why ``props``'s attribute-based selection may pick accelerated types it does not ask for: a block that
    neither sets ``acceleratorCount.max`` to 0 nor lists only CPU types in ``allowedInstanceTypes``."""
    for block in blocks(props):
        if _bound(block, "acceleratorCount", "max") == 0 or _request(block):
            continue
        top = _bound(block, "acceleratorCount", "max")
        if top is UNKNOWN:
            return f"{KEY}.acceleratorCount.max is not known before the update runs"
        allowed = _texts(block.get("allowedInstanceTypes"))
        if allowed and all(p.split("*", 1)[0].split("?", 1)[0] for p in allowed):
            continue  # CPU types or CPU families only (an accelerated one is a request)
        return (f"it picks instance types by attributes ({KEY}) without acceleratorCount.max 0, so EC2 may launch "
                "accelerated types")
    return None
