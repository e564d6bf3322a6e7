"""``ephemeral ls`` and ``ephemeral gc``: the ``ci-*`` stacks, each past its deadline or not, and the collection of
those past it. A stack past its deadline belongs to a run that never finished its teardown (its runner died), so
its artifacts may never have been collected: gc destroys everything but the checkpoint buckets its outputs name
(the instance stops billing) and keeps them with the stack, until ``ephemeral collect`` has downloaded the job's
artifacts and ``ephemeral down --with-buckets`` deletes them; ``--with-buckets`` destroys and removes everything, as
a run's teardown does."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from gpulease.core import vocabulary as v
from gpulease.ephemeral import naming
from gpulease.ephemeral.backend import OutputsUnreadableError, StackBackend, StackInfo, StackMissingError
from gpulease.ephemeral.orchestrator import EXIT_OK, EXIT_TEARDOWN_FAILED, stack_buckets, stack_deadline, teardown
from gpulease.ephemeral.progress import Progress
from gpulease.ephemeral.signals import guard_signals


@dataclass(frozen=True)
class StackStatus:
    info: StackInfo
    deadline: datetime | None
    deadline_source: str
    expired: bool
    reason: str
    buckets: tuple[str, ...] = ()
    unreadable: str | None = None
    """Why its outputs could not be read: its deadline and the buckets to keep are unknown, so it is not touched."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "stack": self.info.name,
            "lastUpdate": v.rfc3339(self.info.last_update) if self.info.last_update else None,
            "resourceCount": self.info.resource_count,
            "updateInProgress": self.info.update_in_progress,
            "deadline": v.rfc3339(self.deadline) if self.deadline else None,
            "deadlineSource": self.deadline_source,
            "expired": self.expired,
            "reason": self.reason,
            "buckets": list(self.buckets),
            "outputsUnreadable": self.unreadable,
        }


def stack_status(backend: StackBackend, info: StackInfo, now: datetime, grace: timedelta) -> StackStatus:
    """Whether an ephemeral stack is past its deadline.

    The deadline is the stack's ``deadline`` output. A stack without one never finished an ``up`` (its runner
    died during it, or it failed): it counts as expired ``grace`` after its last update. A stack that was never
    updated holds no resources and costs nothing; it is reported, not touched."""
    try:
        outputs = backend.outputs(info.name) if info.resource_count != 0 else {}  # an unknown count (None) is read
    except StackMissingError:
        outputs = {}
    except OutputsUnreadableError as exc:
        # Never destroyed blind: its outputs name the buckets that may hold the only copy of its job's artifacts.
        return StackStatus(info, None, "unknown", False, "outputs unreadable: not touched", unreadable=str(exc))
    deadline, buckets = stack_deadline(outputs), stack_buckets(outputs)
    if deadline is not None:
        source = "output"
    elif info.last_update is not None:
        deadline, source = info.last_update + grace, "last update + grace"
    else:
        return StackStatus(info, None, "none", False, "never updated: holds no resources")
    if info.update_in_progress:
        return StackStatus(info, deadline, source, False, "an update is in progress (or its runner died holding the lock)", buckets)
    if deadline > now:
        return StackStatus(info, deadline, source, False, "before its deadline", buckets)
    return StackStatus(info, deadline, source, True, "past its deadline", buckets)


def list_ephemeral(
    backend: StackBackend, now: datetime, grace: timedelta, include_all: bool = False
) -> list[StackStatus]:
    infos = [s for s in backend.list_stacks() if include_all or naming.is_ephemeral(s.name)]
    return [stack_status(backend, info, now, grace) for info in sorted(infos, key=lambda s: s.name)]


def collect_garbage(
    backend: StackBackend,
    progress: Progress,
    *,
    now: datetime,
    grace: timedelta,
    dry_run: bool = False,
    with_buckets: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Destroy every ``ci-*`` stack past its deadline but its checkpoint buckets (all of it ``with_buckets``, and
    remove it); touch nothing else."""
    statuses = list_ephemeral(backend, now, grace)
    selected = [s for s in statuses if s.expired]
    results = []
    unreadable = [s for s in statuses if s.unreadable]
    for status in unreadable:
        progress.note(f"not touched: {status.unreadable}; read them (`pulumi stack output --json --stack "
                      f"{status.info.name}`), then `gpulease ephemeral down {status.info.name}`")
    with guard_signals() as guard:
        guard.disarm()
        for status in selected:
            keep = () if with_buckets else status.buckets
            but = f" but bucket {', '.join(keep)}" if keep else ""
            if dry_run:
                progress.note(f"would destroy {status.info.name}{but} (deadline {status.as_dict()['deadline']})")
                results.append({"stack": status.info.name, "dryRun": True, "keptBuckets": list(keep)})
                continue
            progress.note(f"destroying {status.info.name}{but}: {status.reason} ({status.as_dict()['deadline']})")
            tear = teardown(backend, status.info.name, progress, sleep=sleep, keep_buckets=keep)
            results.append({"stack": status.info.name, "teardown": tear.as_dict()})
    failed = [r for r in results if (t := r.get("teardown")) and not (t["destroyed"] and (t["removed"] or t["keptBuckets"]))]
    return {
        "exitCode": EXIT_TEARDOWN_FAILED if failed or unreadable else EXIT_OK,
        "checked": [s.as_dict() for s in statuses],
        "collected": results,
        "dryRun": dry_run,
        "unreadable": [s.info.name for s in unreadable],
    }
