"""What an experiment costs while a spot reclaim has stopped its instance: its disks and addresses only.

An instance a reclaim stops instead of terminating:

- AWS: a persistent spot request with interruption behaviour ``stop`` or ``hibernate``
  (``instanceMarketOptions.spotOptions`` of an ``aws:ec2/instance:Instance``, or ``spotType`` and
  ``instanceInterruptionBehavior`` of an ``aws:ec2/spotInstanceRequest:SpotInstanceRequest``; pulumi_aws's
  ``InstanceInstanceMarketOptionsSpotOptionsArgs``: "Persistent Spot Instance requests are only supported when the
  instance interruption behavior is either hibernate or stop"). "We don't charge for instance usage or data
  transfer fees when an instance is stopped. However, the root volume and any data volumes remain ... and you're
  charged for volume usage" (StopInstances, botocore's EC2 model; https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_StopInstances.html).
  AWS bills every public IPv4 address, Elastic IPs included (https://aws.amazon.com/vpc/pricing/), so an address
  is counted while stopped. An auto-assigned public IPv4 is released when the instance stops (EC2 user guide,
  instance addressing), but that is not verifiable here, so it is counted too: the figure errs high, never low.
- Alibaba Cloud: ``spotInterruptionBehavior: Stop`` on an ``alicloud:ecs/instance:Instance``: "The instance is
  stopped in economical mode" (pulumi_alicloud's ``InstanceArgs``), in which "its resources such as vCPUs,
  memory, and public IP address are released" and billing of them stops (``stoppedMode``, same docstring); the
  disks keep billing.

The figure is the experiment's lines that keep billing while stopped (``CostLine.keeps_billing_stopped``: every
disk and address of the experiment); its bucket is priced on its own line as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpulease.core import resources as rt
from gpulease.core.cost.lines import CostLine
from gpulease.core.money import usd_per_hour

AWS_STOPPING_BEHAVIOURS = ("stop", "hibernate")
ALICLOUD_STOPPING_BEHAVIOURS = ("Stop",)


def _folded(value: Any) -> Any:
    """EC2's enum values read case aside (``Spot``, ``Persistent``, ``Stop``), so no spelling hides a request."""
    return value.strip().lower() if isinstance(value, str) else value


def _market_stops(market: Mapping[str, Any]) -> bool:
    spot = market.get("spotOptions") or {}
    return (_folded(market.get("marketType")) == "spot" and _folded(spot.get("spotInstanceType")) == "persistent"
            and _folded(spot.get("instanceInterruptionBehavior")) in AWS_STOPPING_BEHAVIOURS)


def stopped_by_reclaim(type_: str, inputs: Mapping[str, Any],
                       templates: Iterable[Mapping[str, Any]] = ()) -> bool:
    """True when a reclaim stops this instance (it keeps its disks, and the cloud may start it again).
    ``templates``: the inputs of the launch templates an AWS instance launches from, whose market options it takes
    when it sets none of its own (RunInstances: parameters given override the template's)."""
    if type_ == rt.AWS_INSTANCE:
        market = inputs.get("instanceMarketOptions")
        if not market:
            return any(_market_stops(t.get("instanceMarketOptions") or {}) for t in templates)
        return _market_stops(market)
    if type_ == rt.AWS_SPOT_REQUEST:
        return (_folded(inputs.get("spotType") or "persistent") == "persistent"
                and _folded(inputs.get("instanceInterruptionBehavior")) in AWS_STOPPING_BEHAVIOURS)
    if type_ == rt.ALI_INSTANCE:
        return (str(inputs.get("spotStrategy") or "NoSpot") != "NoSpot"
                and inputs.get("spotInterruptionBehavior") in ALICLOUD_STOPPING_BEHAVIOURS)
    return False


def stopped_hourly(lines: Iterable[CostLine]) -> float | None:
    """USD per hour of the lines that keep billing while stopped; None when one of them has no price."""
    total = 0.0
    for line in lines:
        if not line.keeps_billing_stopped:
            continue
        if line.hourly_usd is None:
            return None
        total += line.hourly_usd
    return total


def stopped_note(figures: Mapping[str, float | None]) -> list[str]:
    """The report's line(s): one for a single experiment, one per experiment in a sweep."""
    def usd(value: float | None) -> str:
        return "unknown (a disk or address is unpriced or of unknown size)" if value is None else usd_per_hour(value)

    if len(figures) == 1:
        (value,) = figures.values()
        return [f"while stopped by a reclaim: {usd(value)} (volumes and address only)"]
    return [f"while stopped by a reclaim: {name}: {usd(value)} (volumes and address only)"
            for name, value in sorted(figures.items())]
