"""The experiment's hard deadline, fixed once per stack.

Why a recorded value: ``now + maxRuntimeHours`` recomputed on every ``pulumi up`` would push the deadline
later each time. The deadline is stored in state by a ``pulumiverse_time.Static`` resource whose ``rfc3339``
input is computed on the first run and then ignored (``ignore_changes``), so later runs keep the recorded
value. The input is known to the engine at preview, so policies see a concrete expires-at even on the first
``pulumi preview``.

Extending on purpose: set ``expiresAt`` (an explicit deadline) or raise ``deadlineRenewal`` by one; both are
``triggers`` of the resource, so either change records a new value on the next ``pulumi up``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pulumi
import pulumiverse_time as time_provider

from components import vocabulary as v
from components.spec import ExperimentSpec


def proposed_deadline(spec: ExperimentSpec, now: datetime | None = None) -> datetime:
    """The deadline a first run would record: the explicit ``expiresAt``, or now + maxRuntimeHours."""
    if spec.expires_at is not None:
        return spec.expires_at
    now = now or datetime.now(UTC)
    return (now + timedelta(hours=spec.max_runtime_hours)).replace(second=0, microsecond=0)


def record_deadline(spec: ExperimentSpec, parent: pulumi.Resource, now: datetime | None = None) -> pulumi.Output[str]:
    """Register the recorded deadline for one experiment; returns it as an RFC 3339 UTC string."""
    static = time_provider.Static(
        f"{spec.name}-deadline",
        rfc3339=v.rfc3339(proposed_deadline(spec, now)),
        triggers={
            "expiresAt": v.rfc3339(spec.expires_at) if spec.expires_at else "",
            "deadlineRenewal": str(spec.deadline_renewal),
        },
        opts=pulumi.ResourceOptions(parent=parent, ignore_changes=["rfc3339"]),
    )
    return static.rfc3339.apply(lambda value: _refuse_past(spec, value))


def _refuse_past(spec: ExperimentSpec, value: str) -> str:
    """A recorded deadline that has passed must not start a new instance with no timer behind it."""
    deadline = v.parse_rfc3339(value)
    if deadline <= datetime.now(UTC) + timedelta(minutes=5):
        raise pulumi.RunError(
            f"experiment {spec.name!r}: its recorded deadline {v.rfc3339(deadline)} has passed. "
            "To run again on purpose, raise deadlineRenewal by one (or set expiresAt) and run pulumi up."
        )
    return v.rfc3339(deadline)
