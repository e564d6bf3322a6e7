"""``make mutate`` rows for spot recovery's last findings (area ``fix26``): at the deadline a failed own cancel does
not shut down before the stack's cancelling schedule has certainly fired, and then only on a request read as ended;
a power-off after a notice the cloud did not act on cancels the request; the pack's persistent-request rule (the
earliest termination, ``valid_until`` with an earlier termination, a persistent request that terminates on a
reclaim, aws-native and launch-template forms); ``gpulease down`` judges recovery by the live requests."""

from __future__ import annotations

from tools.mutation_row import Mutation

AREA = "fix26"
DOG = "instance/watchdog.py"
REQUEST = "instance/spot_request.py"
DEADLINE_END = ("tests/instance/test_spot_deadline_end.py",)

MUTATIONS = [
    # -- 1: at the deadline, no shutdown before the schedule's cancel, and only on a request read as ended --
    Mutation(AREA, DOG, '        if not settled and cause == "deadline":\n            settled = self.after_schedule_cancel(outcome)',
             '        if not settled and cause == "deadline":\n            settled = True', DEADLINE_END,
             "a failed own cancel at the deadline does not shut down without reading the request's state"),
    Mutation(AREA, DOG, "        if wait > 0:", "        if False:", DEADLINE_END,
             "the state is read only once the stack's cancelling schedule has certainly fired"),
    Mutation(AREA, DOG, '        fired = self.deadline - bounds.value("spot_schedule_lead") + bounds.value("spot_schedule_precision")',
             '        fired = self.deadline - bounds.value("spot_schedule_lead")', DEADLINE_END,
             "the wait covers the Scheduler's precision, not only the schedule's time"),
    Mutation(AREA, REQUEST, "    if all(state in ENDED for state in states):",
             "    if any(state in ENDED for state in states):", DEADLINE_END,
             "every request listed must have ended"),
    Mutation(AREA, REQUEST, '        return False, f"{what} lists no request: its state is not known"',
             '        return True, f"{what} lists no request: its state is not known"', DEADLINE_END,
             "an empty list is not an ended request"),
    Mutation(AREA, DOG, '        if self.pending_end is not None and self.pending_end[0] == "deadline":\n'
             "            self.retry_pending_end(mono)",
             '        if False:\n            self.retry_pending_end(mono)', DEADLINE_END,
             "after the deadline only the cancel is retried (no final sequence on every tick)"),
    Mutation(AREA, DOG, '(cause == "deadline" and self.request_ended(outcome))', "False", DEADLINE_END,
             "a retry at the deadline reads the request's state when the cancel fails"),
    # -- 2: a power-off after a notice the cloud did not act on --
    Mutation(AREA, DOG, "        return self.awaiting_stop is not None and self.clock.monotonic() < self.awaiting_stop",
             "        return True", DEADLINE_END,
             "only while the cloud's stop is awaited is a SIGTERM left without a cancel"),
]
