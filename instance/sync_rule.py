"""When does the checkpoint folder go to the bucket? The periodic sync's schedule, alone (standard library only).

Every ``checkpoint_interval_minutes`` a sync starts in the background; one that runs past
max(``bounds.sync_min``, 2 x the interval) (or ``sync_timeout_minutes``) is killed and retried at the next poll,
since the checkpoints are not safe yet. ``SyncSchedule`` keeps the times; the watchdog runs the command."""

from __future__ import annotations

from typing import Any

try:
    from instance import bounds
except ImportError:  # on the instance: the other tools are installed next to this file
    import bounds  # type: ignore[no-redef]


class SyncSchedule:
    def __init__(self, settings: dict[str, Any], now_mono: float):
        self.s = settings
        self.interval = 60 * float(settings["checkpoint_interval_minutes"])
        self.last = now_mono
        self.failures = 0
        self.last_ok: float | None = None

    @property
    def timeout(self) -> float:
        """Seconds a periodic sync may run before it is killed."""
        given = self.s.get("sync_timeout_minutes")
        return 60 * float(given) if given else max(bounds.value("sync_min"), 2 * self.interval)

    def due(self, mono: float) -> bool:
        if not self.s.get("checkpoint_uri") or mono - self.last < self.interval:
            return False
        self.last = mono
        return True

    def overdue(self, started: float, mono: float) -> bool:
        return mono - started >= self.timeout

    def killed(self, mono: float) -> None:
        """A sync killed at its bound: retried at the next poll, not a whole interval later."""
        self.failures += 1
        self.last = mono - self.interval

    def ended(self, code: int, wall: float) -> None:
        self.failures = 0 if code == 0 else self.failures + 1
        if code == 0:
            self.last_ok = wall
