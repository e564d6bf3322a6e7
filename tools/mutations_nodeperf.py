"""``make mutate`` rows for the instance's log upload (redaction, complete lines, the bound, links and FIFOs, the
copy's time limit), the cluster's wait for peers before the job, and the pack's per-request sharing and indexes."""

from __future__ import annotations

from tools.mutation_row import Mutation

UPLOAD = "instance/log_upload.py"
UPLOAD_TESTS = ("tests/instance/test_log_upload.py",)
LAUNCH = "instance/gpulease_launch.py"
CLUSTER = "instance/cluster.py"
LAUNCH_TESTS = ("tests/instance/test_cluster_launch.py",)
BOUND_TESTS = LAUNCH_TESTS
LINEAR = ("tests/policies/test_linear_rules.py",)

MUTATIONS = [
    Mutation("instance", UPLOAD, '    out = manifest.redact_lines(text)',
             '    out = text', UPLOAD_TESTS,
             "an uploaded log line passes the manifest's redaction"),
    Mutation("instance", UPLOAD, "    return data[: end + 1], start", "    return data, start", UPLOAD_TESTS,
             "only complete lines are uploaded (a cut line could hide a secret from the redaction)"),
    Mutation("instance", UPLOAD, "        start = max(0, size - limit)", "        start = 0", UPLOAD_TESTS,
             "at most MAX_UPLOAD_BYTES of a log file (its end) are uploaded"),
    Mutation("instance", UPLOAD, 'os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))\n    except OSError:\n        return None',
             "os.O_RDONLY)\n    except OSError:\n        return None", UPLOAD_TESTS,
             "a log file is opened without following a link and without blocking on a FIFO"),
    Mutation("instance", UPLOAD, "        if info.st_mode & 0o170000 != 0o100000:\n            return None",
             "        if False:\n            return None", UPLOAD_TESTS,
             "only a regular file is read for upload"),
    Mutation("instance", UPLOAD, "        if code is None and self.dog.clock.monotonic() - job.started < self.upload_timeout:",
             "        if code is None:", UPLOAD_TESTS,
             "a copy that hangs is killed at its time limit"),
    Mutation("instance", UPLOAD, "        else:\n            self.sent[name] = stamp",
             "        if True:\n            self.sent[name] = stamp", UPLOAD_TESTS,
             "a failed copy is tried again at the next round"),
    Mutation("instance", LAUNCH, "    if missing:\n        print(f\"gpulease-launch: node {rank}: the job does not start",
             "    if False:\n        print(f\"gpulease-launch: node {rank}: the job does not start", LAUNCH_TESTS,
             "the job does not start while a peer's watchdog does not answer"),
    Mutation("instance", CLUSTER, "    end = time.monotonic() + limit\n\n    def wait(peer",
             "    end = time.monotonic() + 10 * limit\n\n    def wait(peer", BOUND_TESTS,
             "the wait for peers is bounded by the join timeout in all"),
    Mutation("pack", "policies/guardrails/deadlines.py",
             "        self._inputs = [_schedule_input(s.props) for s in self.schedulers]",
             "        self._inputs = [_schedule_input(s.props) for s in self.schedulers]\n"
             "        [_schedule_input(s.props) for s in self.schedulers for _ in units]", LINEAR,
             "each schedule's input is parsed once, not once per unit"),
    Mutation("pack", "policies/guardrails/common.py", "    return memoized(\"registered\", (r,), lambda: _registered(r))",
             "    return _registered(r)", LINEAR, "a resource is converted once per request for every rule"),
    Mutation("pack", "policies/guardrails/budget.py",
             "    return c.memoized(\"estimate_stack\", resources, lambda: _estimate_stack(resources))",
             "    return _estimate_stack(resources)", LINEAR, "the budget rules share one estimate per request"),
]
