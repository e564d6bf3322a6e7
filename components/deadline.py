"""The experiment's hard deadline, fixed once per stack.

Why a recorded value: ``now + maxRuntimeHours`` recomputed on every ``pulumi up`` would push the deadline
later each time. Unless the spec pins ``expiresAt``, the deadline is stored in state by a
``pulumiverse_time.Static`` resource whose ``rfc3339`` input is computed on the first run and then ignored
(``ignore_changes``): on every later run the engine keeps the recorded value. The input is known to the
engine at preview, so policies see a concrete expires-at even on the first ``pulumi preview``.

Extending on purpose:
- set ``expiresAt`` to an explicit RFC 3339 deadline (used as it is, no recording), or
- raise ``deadlineRenewal`` by one: the record gets a new logical name (``<name>-deadline-r<N>``), so the
  engine creates a fresh record at now + maxRuntimeHours and deletes the old one.
"""

from __future__ import annotations

from datetime import timedelta

import pulumi
import pulumiverse_time as time_provider

from components.spec.experiment import ExperimentSpec
from gpulease.core import clock
from gpulease.core import vocabulary as v


def proposed_deadline(spec: ExperimentSpec) -> str:
    """The deadline a first run records: the explicit ``expiresAt``, or now + maxRuntimeHours (whole minutes)."""
    if spec.expires_at is not None:
        return v.rfc3339(spec.expires_at)
    moment = clock.utcnow() + timedelta(hours=spec.max_runtime_hours)
    return v.rfc3339(moment.replace(second=0, microsecond=0))


def record_name(spec: ExperimentSpec) -> str:
    """``<name>-deadline[-<phase>][-r<N>]``: each phase but ``train`` records its own deadline, so switching phase
    starts the new phase's clock (components/phase.py)."""
    phase = f"-{spec.phase}" if spec.phase != "train" else ""
    suffix = f"-r{spec.deadline_renewal}" if spec.deadline_renewal else ""
    return f"{spec.name}-deadline{phase}{suffix}"


def record_deadline(spec: ExperimentSpec, parent: pulumi.Resource) -> pulumi.Output[str]:
    """The experiment's deadline as an RFC 3339 UTC string (recorded once unless ``expiresAt`` pins it)."""
    if spec.expires_at is not None:
        return pulumi.Output.from_input(proposed_deadline(spec))
    static = time_provider.Static(
        record_name(spec),
        rfc3339=proposed_deadline(spec),
        opts=pulumi.ResourceOptions(parent=parent, ignore_changes=["rfc3339"]),
    )
    return static.rfc3339.apply(lambda value: _refuse_past(spec, value))


def _refuse_past(spec: ExperimentSpec, value: str) -> str:
    """A recorded deadline that has passed must not start a new instance with no timer behind it."""
    deadline = v.parse_rfc3339(value)
    if deadline <= clock.utcnow() + timedelta(minutes=5):
        raise pulumi.RunError(
            f"experiment {spec.name!r}: its recorded deadline {v.rfc3339(deadline)} has passed. "
            "To run again on purpose, raise deadlineRenewal by one (or set expiresAt) and run pulumi up."
        )
    return v.rfc3339(deadline)
