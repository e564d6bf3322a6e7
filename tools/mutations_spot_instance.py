"""``make mutate`` rows for spot recovery on the instance (area ``spot-instance``): a notice with recovery on never
shuts the instance down, the watchdog's own end cancels its own request first and judges the answer, the wait for
the cloud's stop is bounded, a resumed boot never formats its disk nor verifies again, and status shows the stops."""

from __future__ import annotations

from tools.mutation_row import Mutation

AREA = "spot-instance"
RECOVERY = ("tests/instance/test_spot_recovery.py",)
JOURNEY = ("tests/instance/test_reclaim_journey.py",)
DISK = ("tests/instance/test_disk.py", "tests/instance/test_reclaim_journey.py")
STATUS = ("tests/live/test_status.py",)
SAME_DISK = ("tests/instance/test_same_disk_resume.py",)

MUTATIONS = [
    # -- the notice: save and sync, never shut down; the wait for the cloud's stop is bounded --
    Mutation(AREA, "instance/watchdog_spot.py", "            if self.recover:\n                self.save_for_recovery(",
             "            if False:\n                self.save_for_recovery(", (*RECOVERY, *JOURNEY),
             "with spot recovery a notice never shuts the instance down (the cloud stops it)"),
    Mutation(AREA, "instance/watchdog.py", 'self.recover = self.s["spot_recover"] is True and',
             'self.recover = bool(self.s["spot_recover"]) and', RECOVERY, "only a JSON true turns recovery on"),
    Mutation(AREA, "instance/watchdog_spot.py", "            if self.recover and detail == self.handled_notice:\n"
             "                return False", "            if False:\n                return False", RECOVERY,
             "a notice already saved for is not acted on again"),
    Mutation(AREA, "instance/watchdog_spot.py", "        if mono < self.awaiting_stop:\n            return True",
             "        if True:\n            return True", RECOVERY,
             "the wait for the cloud's stop ends: the instance carries on as on a normal boot"),
    Mutation(AREA, "instance/watchdog.py", "        if self.awaiting_stop is not None and self.waiting_for_stop(mono):",
             "        if self.awaiting_stop is not None:", RECOVERY,
             "the deadline is watched while the cloud's stop is waited for"),
    # -- the watchdog's own end: cancel its own request first, judge the answer, bounded, shut down anyway --
    Mutation(AREA, "instance/watchdog_end.py", '        cancel = self.recover and self.cloud == "aws"',
             "        cancel = False", RECOVERY, "the watchdog's own end cancels its own persistent spot request"),
    Mutation(AREA, "instance/spot_request.py", '    if state in ("cancelled", "closed", "completed"):',
             "    if True:", RECOVERY, "a request is cancelled only when EC2 says so"),
    Mutation(AREA, "instance/spot_request.py", "        if not REQUEST_ID.match(found):",
             "        if False:", RECOVERY, "only a spot request id is passed to the cancel"),
    Mutation(AREA, "instance/spot_request.py", "        if spent + RETRY_PAUSE_SECONDS >= budget:",
             "        if spent + RETRY_PAUSE_SECONDS >= 10 * budget:", RECOVERY,
             "the cancel's retries stay within the spot_cancel bound"),
    # -- the boot after a reclaim: the disk as it was, no second verification --
    Mutation(AREA, "instance/instance_setup.py", "    if fstype is None:\n        ev = gather_evidence(",
             "    if True:\n        fstype = None\n        ev = gather_evidence(", DISK,
             "a disk that holds a filesystem is mounted as it is, never probed for a format"),
    Mutation(AREA, "instance/run_job.py",
             '    if earlier.get("passed") is True and instance and earlier.get("instanceId") == instance:',
             "    if False:", JOURNEY, "a verification that passed on this instance is not run again after a reclaim"),
    Mutation(AREA, "instance/run_job.py",
             '    if on_disk.get("passed") is True and instance and on_disk.get("fingerprint") == fingerprint:',
             '    if on_disk.get("passed") is True and instance:', SAME_DISK,
             "a pass on the data disk stands only for the same stack, experiment, verification, job and type"),
    Mutation(AREA, "instance/run_job.py",
             "    if not same or not isinstance(other, str) or not other or other == instance or s.get(\"stack\") is None:",
             "    if not isinstance(other, str) or not other or other == instance:", SAME_DISK,
             "only this experiment's job on the disk makes a replacement instance a resumption"),
    # -- status --
    Mutation(AREA, "gpulease/live/status.py", "    chosen = max(lists, key=len) if lists else []",
             "    chosen = lists[-1] if lists else []", STATUS,
             "status shows the heartbeat's newer interruptions over the manifest's"),
    Mutation(AREA, "gpulease/live/status.py",
             "    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e12 else None",
             "    return int(value) if isinstance(value, (int, float)) and 0 <= value < 1e12 else None", STATUS,
             "a boolean is not a number of seconds or a step"),
]
