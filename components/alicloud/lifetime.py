"""The hard deadline outside the instance: ECS releases the instance itself at ``auto_release_time``.

Alibaba Cloud keeps the timer on the instance, so no scheduler or role is needed: at the recorded deadline ECS
releases the instance (a data disk with ``delete_with_instance = false`` survives). The watchdog inside the
instance stops work at the same moment after a last checkpoint sync; the release is the backstop that works
even when the instance is wedged.
"""

from __future__ import annotations

from datetime import timedelta
from typing import cast

import pulumi
import pulumi_alicloud as alicloud

from components.alicloud.identity import allow_self_release, attach_instance_role
from components.plan import ExperimentParts
from gpulease.core import clock
from gpulease.core import vocabulary as v


def release_time(deadline_rfc3339: str) -> str:
    """Alibaba Cloud's form of the deadline: UTC ``yyyy-MM-ddTHH:mm:ssZ`` in whole minutes.

    ECS ignores the seconds of a release time; rounding down ourselves keeps the release at or before the
    recorded deadline, never after it."""
    moment = v.parse_rfc3339(deadline_rfc3339).replace(second=0, microsecond=0)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def checked_release_time(name: str, deadline_rfc3339: str) -> str:
    """``release_time``, refusing a deadline Alibaba Cloud would reject (under 30 minutes away)."""
    value = release_time(deadline_rfc3339)
    lead = v.parse_rfc3339(value) - clock.utcnow()
    if lead < timedelta(minutes=v.ALICLOUD_MIN_RELEASE_MINUTES):
        raise pulumi.RunError(
            f"experiment {name!r}: its deadline {value} is less than {v.ALICLOUD_MIN_RELEASE_MINUTES} minutes away, "
            "and Alibaba Cloud refuses a release time that close. Raise deadlineRenewal by one (or set a later "
            "expiresAt) and run pulumi up, or let the experiment end."
        )
    return value


def auto_release_time(name: str, deadline: pulumi.Output[str]) -> pulumi.Output[str]:
    """The instance's ``auto_release_time``, derived from the recorded deadline."""
    return deadline.apply(lambda value: checked_release_time(name, value))


class AlicloudLifetime:
    """The deadline part of the Alibaba Cloud cloud: the release time is on the instance (``create_instance``);
    once the instance exists, its role is attached and may release that instance (the watchdog's earlier ends)."""

    def after_instance(self, exp: ExperimentParts, instance: pulumi.CustomResource, identity: pulumi.Resource) -> None:
        role = cast(alicloud.ram.Role, identity)
        attach_instance_role(exp.name, role, instance, exp.parent)
        allow_self_release(exp, role, instance)
