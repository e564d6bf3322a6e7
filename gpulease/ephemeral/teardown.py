"""Tearing an ephemeral stack down: destroy (retried), then remove; or keep the bucket that still holds artifacts."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpulease.ephemeral.backend import StackBackend, StackMissingError
from gpulease.ephemeral.progress import Progress

DESTROY_ATTEMPTS = 3


def collect_hint(stack: str) -> str:
    """What to do with a stack kept with its checkpoint buckets (the stack's outputs say where the job's artifacts are)."""
    return (f"`gpulease ephemeral collect {stack} --artifacts-dir DIR` downloads the job's artifacts; once all are "
            f"collected, `gpulease ephemeral down {stack} --with-buckets` deletes the buckets and the stack")


@dataclass
class Teardown:
    attempted: bool = False
    destroyed: bool = False
    removed: bool = False
    error: str | None = None
    resources_deleted: int = 0
    kept_buckets: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "keptBuckets": list(self.kept_buckets),
            "attempted": self.attempted,
            "destroyed": self.destroyed,
            "removed": self.removed,
            "resourcesDeleted": self.resources_deleted,
            "error": self.error,
        }


def teardown(
    backend: StackBackend,
    stack: str,
    progress: Progress,
    *,
    attempts: int = DESTROY_ATTEMPTS,
    sleep: Callable[[float], None] = time.sleep,
    keep_buckets: tuple[str, ...] = (),
) -> Teardown:
    """Destroy (retrying: deletes can race the cloud's own eventual consistency), then remove the stack.
    ``keep_buckets``: artifacts may still be in those buckets, so everything else is destroyed (the instance stops
    billing) and the buckets, with the stack that holds them, are kept."""
    result = Teardown(attempted=True, kept_buckets=keep_buckets)
    with progress.step("destroy") as record:
        for attempt in range(1, attempts + 1):
            try:
                changes = backend.destroy(stack, lambda line: progress.line("pulumi", line), progress.resource,
                                          **({"keep_buckets": keep_buckets} if keep_buckets else {}))
                result.destroyed, result.error = True, None  # an earlier attempt's failure is over
                result.resources_deleted = changes.resource_changes.get("delete", 0)
                break
            except StackMissingError:
                result.destroyed, result.error = True, None
                record.detail = "stack already gone"
                break
            except Exception as exc:
                result.error = f"destroy attempt {attempt}/{attempts} failed: {str(exc).strip()[:500]}"
                progress.note(result.error)
                if attempt < attempts:
                    sleep(min(30.0, 5.0 * attempt))
        if not result.destroyed:
            record.status = "failed"
            record.detail = "stack kept for ephemeral gc (its deadline still stops the instance)"
    if not result.destroyed:
        return result
    if keep_buckets:
        progress.note(f"kept bucket {', '.join(keep_buckets)} and stack {stack}: artifacts there may not have been collected; "
                      f"{collect_hint(stack)}")
        return result
    with progress.step("remove stack") as record:
        try:
            backend.remove(stack)
            result.removed = True
            result.error = None
        except StackMissingError:
            result.removed = True
            result.error = None
        except Exception as exc:
            result.error = f"remove failed: {str(exc).strip()[:500]}"
            record.status = "failed"
            record.detail = result.error
    return result
