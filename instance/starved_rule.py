"""Is the job waiting for its data? The starved-GPU rule, alone (standard library only).

A job whose GPUs stay busy but below ``starved_gpu_percent`` (40 by default) for ``starved_minutes`` (30) is
flagged in the heartbeat as ``gpuStarved: {"since", "meanUtilizationPercent", "thresholdPercent"}`` (null
otherwise): the data loader, not the GPU, sets the pace. It is distinct from idle: a GPU below the idle threshold
(``idle_gpu_percent``) is idle, not starved, and a GPU at or above the starved threshold ends the episode. The mean
is the mean of the samples since the episode began (every GPU's mean utilisation per sample)."""

from __future__ import annotations

from typing import Any

try:
    from instance import cloud_access as ca
except ImportError:  # on the instance: the other tools are installed next to this file
    import cloud_access as ca  # type: ignore[no-redef]

DEFAULT_PERCENT = 40.0
DEFAULT_MINUTES = 30.0


class StarvedRule:
    def __init__(self, settings: dict[str, Any]):
        self.enabled = settings.get("idle_source") != "cpu"
        self.idle = float(settings.get("idle_gpu_percent", 5))
        given = settings.get("starved_gpu_percent")
        self.threshold = float(given) if isinstance(given, (int, float)) and not isinstance(given, bool) else DEFAULT_PERCENT
        minutes = settings.get("starved_minutes")
        self.window = 60 * (float(minutes) if isinstance(minutes, (int, float)) and not isinstance(minutes, bool)
                            else DEFAULT_MINUTES)
        self.since: tuple[float, float] | None = None  # (monotonic, wall) of the episode's first sample
        self.total = 0.0
        self.samples = 0

    def observe(self, mono: float, now: float, utilization: list[float | None]) -> dict[str, Any] | None:
        """One sample (per GPU, None where not reported) -> the flag, or None."""
        known = [u for u in utilization if u is not None]
        if not self.enabled or not known:
            self.since, self.total, self.samples = None, 0.0, 0
            return None
        mean = sum(known) / len(known)
        if mean < self.idle or mean >= self.threshold:
            self.since, self.total, self.samples = None, 0.0, 0
            return None
        if self.since is None:
            self.since = (mono, now)
        self.total += mean
        self.samples += 1
        if mono - self.since[0] < self.window:
            return None
        return {"since": ca.utc_stamp(self.since[1]), "meanUtilizationPercent": round(self.total / self.samples, 1),
                "thresholdPercent": self.threshold}
