"""Will the next checkpoint fit? Free space on the data and root disks, for the heartbeat (standard library only).

The heartbeat lists ``disks: [{"mount", "freeBytes", "totalBytes", "freePercent"}]`` for the data disk's mount point
and the root filesystem, and warns (a ``disk-warning`` line and the warn hook with ``GPULEASE_REASON=disk-space``)
once per disk when its free space falls below ``disk_warn_free_percent`` (10 by default), or, on the data disk,
below ``disk_warn_checkpoint_factor`` (2) times the newest checkpoint's size: the next save would fill it. The
warning is given again only after the disk recovered."""

from __future__ import annotations

import os
from typing import Any

DEFAULT_FREE_PERCENT = 10.0
DEFAULT_CHECKPOINT_FACTOR = 2.0


class DiskWatch:
    def __init__(self, settings: dict[str, Any]):
        self.data = settings.get("mount_point") or "/data"
        mounts = settings.get("disk_mounts")
        self.mounts = [str(m) for m in mounts] if isinstance(mounts, list) and mounts else [self.data, "/"]
        self.percent = _positive(settings.get("disk_warn_free_percent"), DEFAULT_FREE_PERCENT)
        self.factor = _positive(settings.get("disk_warn_checkpoint_factor"), DEFAULT_CHECKPOINT_FACTOR)
        self.warned: set[str] = set()

    def report(self, newest_size: int | None = None) -> list[dict[str, Any]]:
        found = []
        for mount in dict.fromkeys(self.mounts):
            try:
                fs = os.statvfs(mount)
            except OSError:
                continue
            total, free = fs.f_blocks * fs.f_frsize, fs.f_bavail * fs.f_frsize
            entry: dict[str, Any] = {"mount": mount, "freeBytes": free, "totalBytes": total,
                                     "freePercent": round(100 * free / total, 1) if total else None}
            entry["_low"] = self._low(mount, free, total, newest_size)
            found.append(entry)
        self._pending = [(e["mount"], e.pop("_low")) for e in found]
        return found

    def _low(self, mount: str, free: int, total: int, newest_size: int | None) -> str | None:
        if total and 100 * free / total < self.percent:
            return f"{mount} has {free / 2**30:.1f} GiB free ({100 * free / total:.1f}%), below {self.percent:g}%"
        if mount == self.data and newest_size and free < self.factor * newest_size:
            return (f"{mount} has {free / 2**30:.1f} GiB free, less than {self.factor:g} x the newest checkpoint "
                    f"({newest_size / 2**30:.1f} GiB): the next save may fill the disk")
        return None

    def new_warnings(self, _disks: list[dict[str, Any]]) -> list[str]:
        """The warnings not given yet (each disk once, again after it recovered)."""
        out = []
        for mount, low in getattr(self, "_pending", []):
            if low is None:
                self.warned.discard(mount)
            elif mount not in self.warned:
                self.warned.add(mount)
                out.append(low)
        return out


def _positive(value: Any, default: float) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1e6:
        return float(value)
    return default
