"""When does this instance end? The deadline rule, alone (standard library only).

The deadline is the instance's own ``gpulease:expires-at`` tag, read on every poll (``cloud_access.InstanceDeadline``:
metadata, then the ECS API on Alibaba Cloud). When no read answers, the last value read holds (kept in the
watchdog's state, which belongs to this instance id: ``instance_state``), and before any was read: first boot +
``max_runtime_hours``. ``DeadlineRule`` keeps that value and says when to warn and when to start the final
sequence; the state and the reader are passed in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    from instance import cloud_access as ca
    from instance import instance_state as st
except ImportError:  # on the instance: the other tools are installed next to this file
    import cloud_access as ca  # type: ignore[no-redef]
    import instance_state as st  # type: ignore[no-redef]

stamp = ca.utc_stamp


class DeadlineRule:
    def __init__(self, settings: dict[str, Any], state: dict[str, Any], read: Callable[[], tuple[float, str]],
                 save: Callable[[], None], decide: Callable[[str, str], None]):
        self.s, self.state, self.read, self.save, self.decide = settings, state, read, save, decide
        self.deadline, self.source = self.fallback()
        self.read_once = False
        self.failing = False
        self.warned = False

    def fallback(self) -> tuple[float, str]:
        kept = st.epoch(self.state.get("deadline"))  # a kept value that is not a time is unknown
        if kept is not None:
            return kept, "the last value read from the tag"
        first = st.epoch(self.state.get("first_boot"))
        hours = st.number(self.s.get("max_runtime_hours"))
        if first is None or hours is None or hours < 0:  # fail closed: no deadline that is not a time
            at = first if first is not None else 0.0
            return at, (f"first boot {self.state.get('first_boot')!r} + max_runtime_hours "
                        f"{self.s.get('max_runtime_hours')!r} is not a time: ending now (tag not read yet)")
        return first + hours * 3600, f"first boot {stamp(first)} + max_runtime_hours {hours:g} (tag not read yet)"

    def rebase(self, state: dict[str, Any]) -> None:
        """The state claimed again (the instance id became readable): before any tag was read, the fallback
        follows the claimed record; a value read from the tag stays and is kept in it."""
        self.state = state
        if self.read_once:
            state["deadline"] = self.deadline
            self.save()
        else:
            self.deadline, self.source = self.fallback()

    def refresh(self) -> None:
        """The tag; when no read answers, the deadline held stays."""
        try:
            value, source = self.read()
        except ca.DeadlineUnreadError as exc:
            if not self.failing:
                self.decide("deadline-unread", f"{exc}; keeping {stamp(self.deadline)} ({self.source})")
            self.failing = True
            return
        if st.epoch(value) is None:  # a tag that is not a time is not read: the deadline held stays
            if not self.failing:
                self.decide("deadline-unread", f"{self.s.get('deadline_tag')} read as {value!r}, not a time; "
                            f"keeping {stamp(self.deadline)} ({self.source})")
            self.failing = True
            return
        self.failing = False
        if value != self.deadline or not self.read_once:
            if self.read_once:
                self.decide("deadline-changed", f"{self.s['deadline_tag']} is now {stamp(value)} (was "
                            f"{stamp(self.deadline)}; {source})")
                self.warned = False
            self.deadline, self.read_once = value, True
            self.state["deadline"] = value
            self.save()
        self.source = source

    def final_at(self) -> float:
        return self.deadline - 60 * float(self.s["final_sync_minutes"])

    def due_warning(self, now: float) -> bool:
        """True once, ``warn_minutes`` before the deadline (again after the deadline changes)."""
        if self.warned or now < self.deadline - 60 * float(self.s["warn_minutes"]):
            return False
        self.warned = True
        return True
