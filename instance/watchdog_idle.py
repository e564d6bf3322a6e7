"""When is this instance idle? The measurement (GPU or CPU, busy marker, login sessions) handed to ``idle_rule``."""

from __future__ import annotations

try:
    from instance import bounds, idle_rule
    from instance import cloud_access as ca
    from instance.watchdog_procs import _cmdlines
except ImportError:  # on the instance: the other tools are installed next to this file
    import bounds  # type: ignore[no-redef]
    import cloud_access as ca  # type: ignore[no-redef]
    import idle_rule  # type: ignore[no-redef]
    from watchdog_procs import _cmdlines  # type: ignore[no-redef]


class IdleMixin:
    """When is this instance idle? The measurement (GPU or CPU, busy marker, login sessions) handed to ``idle_rule``."""

    def check_idle(self, mono: float) -> bool:
        """Measure, ask ``idle_rule``, act on its verdict."""
        if self.s.get("idle_source") == "cpu":
            utilization, error = self.cpu_meter.read()
            memory = ""
        else:
            def smi(args: list[str]) -> tuple[int | None, str]:  # a MIG GPU's tables: the whole output, bounded
                code, out, _ = ca.run_bounded_split([self.s["nvidia_smi"], *args],
                                                    self.clock.real(bounds.value("gpu_query")), max_stdout=1 << 18)
                return code, out

            def query(args: list[str]) -> tuple[int | None, str]:
                return ca.run_bounded([self.s["nvidia_smi"], *args], self.clock.real(bounds.value("gpu_query")))

            code, out = idle_rule.query_gpus(query)
            utilization, error, memory = idle_rule.gpu_reading(code, out, smi)
        busy = self.busy_reason()
        verdicts = self.idle.observe(mono, utilization, error, busy, memory)
        for verdict in verdicts[:-1]:
            self.decide(verdict.event, verdict.reason)
        last = verdicts[-1]
        if last.shutdown:
            self.finish(last.event, last.reason, None, hook=False)
            return True
        self.decide(last.event, last.reason)
        return False

    def busy_reason(self) -> str | None:
        busy, stale = idle_rule.busy_marker(self.s["busy_marker"], float(self.s["busy_marker_max_age_minutes"]),
                                            self.clock.now())
        if stale:
            self.decide("busy-marker-stale", stale)
        if busy:
            return busy
        sessions = idle_rule.login_sessions(_cmdlines(self.s["proc_root"]))
        if sessions:
            return f"{len(sessions)} live session(s): {', '.join(sessions[:3])}"
        return None
