"""What a refresh found, per cloud, and the gate every price passes before it can be written.

A price comes from an API as a string or a number; ``accept`` turns it into a float only when it is finite and
positive. Anything else (a NaN, an infinity, a negative, zero, an empty string, a field missing) is refused with
a reason that the refresh reports, never written: a zero hourly price is what the Price List shows for a
Capacity Block SKU, not what a running instance costs, and a NaN would compare false with every budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from gpulease.core.catalog.models import PRICE_CEILING, PRICE_ITEM_FLOOR


class RejectedPriceError(ValueError):
    """A price an API gave that the catalog must not hold."""


def accept(value: Any, what: str) -> float:
    """``value`` as a finite, positive float within the catalog's floor and ceiling, else ``RejectedPriceError`` naming ``what``."""
    if isinstance(value, bool) or value is None or (isinstance(value, str) and not value.strip()):
        raise RejectedPriceError(f"{what}: no price given ({value!r})")
    try:
        number = float(Decimal(str(value).strip())) if isinstance(value, str) else float(value)
    except (InvalidOperation, TypeError, ValueError):
        raise RejectedPriceError(f"{what}: {value!r} is not a number") from None
    if not math.isfinite(number):
        raise RejectedPriceError(f"{what}: {value!r} is not a finite number")
    if number < PRICE_ITEM_FLOOR:  # the catalog refuses a positive price below the floor too
        raise RejectedPriceError(f"{what}: {value!r} is not a positive price of at least {PRICE_ITEM_FLOOR:g} USD")
    if number > PRICE_CEILING:  # and one above the ceiling: the written file must load
        raise RejectedPriceError(f"{what}: {value!r} is above any price; accepted: at most {PRICE_CEILING:g} USD")
    return number


def family(cloud: str, instance_type: str) -> str:
    """The instance family: ``g5.xlarge`` -> ``g5``; ``ecs.gn7i-c8g1.2xlarge`` -> ``ecs.gn7i``,
    ``ecs.gn8is-2x.8xlarge`` -> ``ecs.gn8is`` (Alibaba Cloud names sizes after a dash inside the family part)."""
    if cloud == "aws":
        return instance_type.split(".")[0]
    head = instance_type.split(".")
    return ".".join(head[:2]).split("-")[0] if len(head) >= 2 else instance_type


@dataclass
class NewType:
    """An instance type the API lists in a family the catalog knows, with the hardware facts a row needs."""

    cloud: str
    type: str
    gpu_count: int
    vcpu: int
    ram_gb: float
    family_of: str
    """The known type of the same family whose GPU facts (model, memory, bandwidth, link, discount) it takes."""


@dataclass
class Fetched:
    """Everything one cloud's refresh found; ``failures`` are calls that did not succeed (a partial refresh)."""

    cloud: str
    as_of: date
    on_demand: dict[tuple[str, str], float] = field(default_factory=dict)  # (type, region) -> USD/h
    spot: dict[tuple[str, str], float] = field(default_factory=dict)  # (type, zone) -> USD/h
    region_items: dict[tuple[str, str], float] = field(default_factory=dict)  # (region, item) -> USD
    new_types: dict[str, NewType] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    """Prices not written, with the reason (rejected, ambiguous, not offered): reported, not fatal."""
    failures: list[str] = field(default_factory=list)
    """Calls that failed after the SDK's retries: the refresh is partial."""
    calls: int = 0

    def put(self, table: dict[tuple[str, str], float], key: tuple[str, str], value: Any, what: str) -> None:
        """Record ``value`` under ``key`` if it passes ``accept``; otherwise note why it was skipped."""
        try:
            table[key] = accept(value, what)
        except RejectedPriceError as exc:
            self.skipped.append(str(exc))

    def merge(self, other: Fetched) -> None:
        self.on_demand.update(other.on_demand)
        self.spot.update(other.spot)
        self.region_items.update(other.region_items)
        self.new_types.update(other.new_types)
        self.skipped += other.skipped
        self.failures += other.failures
        self.calls += other.calls
