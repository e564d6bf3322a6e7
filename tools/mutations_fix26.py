"""``make mutate`` rows for spot recovery's last findings (area ``fix26``): at the deadline a failed own cancel does
not shut down before the stack's cancelling schedule has certainly fired, and then only on a request read as ended;
a power-off after a notice the cloud did not act on cancels the request; the pack's persistent-request rule (the
earliest termination, ``valid_until`` with an earlier termination, a persistent request that terminates on a
reclaim, aws-native and launch-template forms); ``gpulease down`` judges recovery by the live requests."""

from __future__ import annotations

from tools.mutation_row import Mutation

AREA = "fix26"
DOG = "instance/watchdog.py"
DOG_END = "instance/watchdog_end.py"
DOG_SPOT = "instance/watchdog_spot.py"
REQUEST = "instance/spot_request.py"
DEADLINE_END = ("tests/instance/test_spot_deadline_end.py",)
PERSISTENT = ("tests/policies/test_persistent_requests.py",)
ENDS = TEMPLATES = PERSISTENT
DEADLINES = "policies/guardrails/deadlines.py"

MUTATIONS = [
    # -- 1: at the deadline, no shutdown before the schedule's cancel, and only on a request read as ended --
    Mutation(AREA, DOG_END, '        if not settled and cause == "deadline":\n            settled = self.after_schedule_cancel(outcome)',
             '        if not settled and cause == "deadline":\n            settled = True', DEADLINE_END,
             "a failed own cancel at the deadline does not shut down without reading the request's state"),
    Mutation(AREA, DOG_SPOT, "        if wait > 0:", "        if False:", DEADLINE_END,
             "the state is read only once the stack's cancelling schedule has certainly fired"),
    Mutation(AREA, DOG_SPOT, '        fired = self.deadline - bounds.value("spot_schedule_lead") + bounds.value("spot_schedule_precision")',
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
    Mutation(AREA, DOG_SPOT, '(cause == "deadline" and self.request_ended(outcome))', "False", DEADLINE_END,
             "a retry at the deadline reads the request's state when the cancel fails"),
    # -- 2: a power-off after a notice the cloud did not act on --
    Mutation(AREA, DOG_SPOT, "        return self.awaiting_stop is not None and self.clock.monotonic() < self.awaiting_stop",
             "        return True", DEADLINE_END,
             "only while the cloud's stop is awaited is a SIGTERM left without a cancel"),
    # -- 3: a cancel counts at the end of its flexible window, a termination at the start of its own --
    Mutation(AREA, DEADLINES, "        first_stop = min((t[0] for t in terminates if isinstance(t, tuple)), default=None)",
             "        first_stop = min((t[1] for t in terminates if isinstance(t, tuple)), default=None)", ENDS,
             "a termination counts from the earliest time its flexible window lets it fire"),
    Mutation(AREA, DEADLINES, "        first_cancel = min((t[1] for t in cancels if isinstance(t, tuple)), default=None)",
             "        first_cancel = min((t[0] for t in cancels if isinstance(t, tuple)), default=None)", ENDS,
             "a cancel counts from the latest time its flexible window lets it fire"),
    # -- 4: valid_until with a termination before it --
    Mutation(AREA, DEADLINES, "        if until is not None and (first_stop is None or first_stop - until >= SCHEDULER_PRECISION):",
             "        if until is not None:", PERSISTENT,
             "a request ended by valid_until alone is not terminated before it"),
    # -- 5: persistent and terminated on interruption --
    Mutation(AREA, "gpulease/core/compute/aws_forms.py",
             '    behavior = _folded(read(props, "instanceInterruptionBehavior", "terminate"))',
             '    behavior = _folded(read(props, "instanceInterruptionBehavior", "stop"))', ENDS,
             "a spot request is terminated on interruption unless it says otherwise (the SDK's default)"),
    Mutation(AREA, "gpulease/core/compute/aws_forms.py",
             "        persistent=_persistent_spot_request, cancels=CANCEL_SCHEDULE, hazards=_request_hazards,",
             "        persistent=_persistent_spot_request, cancels=CANCEL_SCHEDULE,", ENDS,
             "a persistent request that terminates on a reclaim cannot be bounded"),
    # -- 6: aws-native and launch-template forms --
    Mutation(AREA, "gpulease/core/compute/aws_forms.py", "(rt.AWS_LAUNCH_TEMPLATE, rt.AWS_NATIVE_LAUNCH_TEMPLATE))",
             "(rt.AWS_LAUNCH_TEMPLATE,))", TEMPLATES, "a pulumi_aws instance reads an aws-native launch template"),
    Mutation(AREA, "gpulease/core/compute/aws_native_forms.py",
             "        persistent=_no_market_options, cancels=a.CANCEL_SCHEDULE,\n", "", TEMPLATES,
             "an aws-native instance's persistent request (its template's) is judged"),
    Mutation(AREA, "gpulease/core/compute/aws_native_forms.py", "        persistent=_lt_persistent,\n", "", TEMPLATES,
             "an aws-native launch template's persistent market options are read"),
    Mutation(AREA, DEADLINES, "read(props, OWN_TYPE) not in (None, UNKNOWN)",
             'read(props, "instanceMarketOptions") is not None', TEMPLATES,
             "market options naming no spot type do not hide the template's persistent one"),
    # -- 8: down judges by the live requests, not the file --
    Mutation(AREA, "gpulease/lifecycle/teardown.py", '    return st.spec.cloud == "aws"\n',
             '    return st.spec.cloud == "aws" and any(e.spot.recover for e in st.spec.experiments)\n',
             ("tests/cli/test_down.py",), "down ends a stack's live spot requests whatever its file says now"),
]
