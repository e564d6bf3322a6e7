"""The instance tools' clock: wall and monotonic time, optionally accelerated (standard library only).

Every rule of the watchdog takes its time from one of these, passed in, so that a test runs hours in seconds
(``GPULEASE_CLOCK_SPEED``, ``GPULEASE_CLOCK_START``) and a rule can be read and tested without the loop."""

from __future__ import annotations

import time


class Clock:
    """Wall and monotonic time, optionally accelerated: ``speed`` virtual seconds pass per real second.

    The deadline is an instant in UTC and is compared with the wall clock (NTP-disciplined, as the cloud's own
    timer is); every duration (intervals, idle time, grace periods, timeouts) uses the monotonic clock, which a
    wall-clock jump does not move."""

    def __init__(self, speed: float = 1.0, start: float | None = None):
        self.speed = speed
        self._start = start
        self._real0 = time.monotonic()
        self._wall0 = time.time() if start is None else start

    @classmethod
    def from_env(cls, env: dict[str, str]) -> Clock:
        speed = float(env.get("GPULEASE_CLOCK_SPEED") or 1.0)
        start = env.get("GPULEASE_CLOCK_START")
        return cls(speed=speed, start=float(start) if start else None)

    def now(self) -> float:
        if self._start is None and self.speed == 1.0:
            return time.time()  # follows NTP corrections, which matter for a deadline
        return self._wall0 + (time.monotonic() - self._real0) * self.speed

    def monotonic(self) -> float:
        return (time.monotonic() - self._real0) * self.speed

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds) / self.speed)

    def real(self, seconds: float) -> float:
        """Virtual seconds as real seconds, for subprocess and socket timeouts."""
        return max(0.05, seconds / self.speed)

    def virtual(self, real_seconds: float) -> float:
        """Real seconds spent waiting, as virtual seconds."""
        return real_seconds * self.speed


