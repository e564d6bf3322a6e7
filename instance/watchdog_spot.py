"""The watchdog's spot part: notices (its own and a cluster peer's), spot recovery, the cancel of its own request."""

from __future__ import annotations

import threading
from typing import Any

try:
    from instance import bounds, manifest, spot_request, spot_rule
    from instance import cloud_access as ca
    from instance import instance_state as st
    from instance.watchdog_defaults import NOTICE_WINDOW_SECONDS, stamp
except ImportError:  # on the instance: the other tools are installed next to this file
    import bounds  # type: ignore[no-redef]
    import cloud_access as ca  # type: ignore[no-redef]
    import instance_state as st  # type: ignore[no-redef]
    import manifest  # type: ignore[no-redef]
    import spot_request  # type: ignore[no-redef]
    import spot_rule  # type: ignore[no-redef]
    from watchdog_defaults import NOTICE_WINDOW_SECONDS, stamp  # type: ignore[no-redef]


class SpotMixin:
    """The watchdog's spot part: notices (its own and a cluster peer's), spot recovery, the cancel of its own request."""

    def check_spot(self) -> bool:
        try:
            notice = self.spot_notice()
        except ca.MetadataError as exc:
            if not self.metadata_failing:
                self.decide("metadata-error", f"{exc}; spot notices cannot be seen until it answers, carrying on")
            self.metadata_failing = True
            return False
        if self.metadata_failing:
            self.decide("metadata-recovered", "the metadata service answers again")
            self.metadata_failing = False
        if notice is None:
            return False
        kind, detail, window_end = notice
        if kind == "interruption":
            if self.recover and detail == self.handled_notice:
                return False  # saved and synced already; the cloud did not stop this instance (waiting_for_stop)
            if self.cluster is not None:  # every node saves and syncs, not only this one
                self.cluster.announce(detail, window_end)
            if self.recover:
                self.save_for_recovery("spot-interruption", detail, window_end)
            else:
                self.finish("spot-interruption", detail, window_end)
            return True
        if self.rebalance_seen:
            return False
        self.rebalance_seen = True
        action = self.s["on_rebalance"]
        if action == "shutdown":
            self.finish("spot-rebalance", detail + " (on_rebalance: shutdown)", None)
            return True
        if action == "checkpoint":
            self.decide("spot-rebalance", detail + " (on_rebalance: checkpoint) -> checkpoint hook, sync beside the loop; keep running")
            self.rebalance_thread = threading.Thread(target=self._rebalance_checkpoint, daemon=True)
            self.rebalance_thread.start()
        else:
            self.decide("spot-rebalance", detail + " (on_rebalance: ignore) -> nothing")
        return False

    def spot_notice(self) -> tuple[str, str, float | None] | None:
        """('interruption' | 'rebalance', what was seen, end of the notice window) or None (``spot_rule``)."""
        return spot_rule.read_notice(self.cloud, self.metadata.get, self.clock.now())

    def check_cluster(self) -> bool:
        """A peer's spot notice: this node runs its own final sequence within the window the notice gave."""
        assert self.cluster is not None
        notice = self.cluster.pending()
        if notice is None:
            return False
        given = notice.get("window_end")
        end = float(given) if isinstance(given, (int, float)) else self.clock.now() + NOTICE_WINDOW_SECONDS.get(self.cloud, 120)
        reason = f"node {notice.get('from')} of the cluster got a spot notice ({notice.get('reason')})"
        if self.recover:
            self.save_for_recovery("cluster-spot-interruption", reason, min(end, self.deadline))
        else:
            self.finish("cluster-spot-interruption", reason, min(end, self.deadline))
        return True

    # -- spot recovery --

    def save_for_recovery(self, cause: str, detail: str, window_end: float | None) -> None:
        """A notice with spot recovery on: checkpoint hook and final sync within the window, and NO shutdown: the
        cloud stops this instance (a shutdown from inside would terminate it and, on AWS, open its persistent
        request again). Then the stop is waited for, bounded (``waiting_for_stop``)."""
        self.handled_notice = detail
        self.decide(cause, detail + " -> checkpoint hook, final sync; no shutdown (spot recovery: the cloud stops "
                    "this instance and starts it again, and the job resumes from its checkpoint)")
        self.stop_background()
        self.checkpoint_hook(cause, window_end)
        if window_end is None:
            window_end = self.clock.now() + NOTICE_WINDOW_SECONDS.get(self.cloud, 120)
        self.final_sync(window_end)
        self.flush_logs(window_end)
        self.notice_end = window_end
        wait = max(0.0, window_end - self.clock.now()) + bounds.value("spot_stop_wait", self.s)
        self.awaiting_stop = self.clock.monotonic() + wait  # timed on the monotonic clock: a clock step cannot stretch it
        self.state["spot_notice"] = {"seen": stamp(self.clock.now()), "detail": detail, "windowEnd": stamp(window_end)}
        self._save_state(self.state)
        try:  # the next boot's gap is a stop, not running time
            st.expect_stop(self.s["state_dir"], self.claim, f"{cause}: {detail}")
        except OSError as exc:
            self.decide("state", f"cannot record the expected stop: {exc}")
        self.decide("spot-recover", f"saved; waiting for the cloud to stop this instance (until "
                    f"{stamp(self.clock.now() + wait)}, then carrying on as on a normal boot)")

    def waiting_for_stop(self, mono: float) -> bool:
        """True while the cloud's stop is awaited (only the deadline is watched meanwhile); past the bound (on the
        monotonic clock), the instance carries on as on a normal boot: idle, periodic syncs and notices again."""
        assert self.awaiting_stop is not None
        if mono < self.awaiting_stop:
            return True
        late = bounds.value("spot_stop_wait", self.s)
        self.decide("spot-recover", f"still running {late:.0f} s after the notice window closed: the cloud has not "
                    "stopped this instance; carrying on as on a normal boot (deadline, idle, periodic syncs)")
        self.awaiting_stop = None
        self.last_idle_check = float("-inf")
        return False

    def retry_pending_end(self, mono: float) -> None:
        """An end whose cancel failed: try the cancel again every ``spot_cancel_retry`` (at the deadline, and read the
        request's state when it fails); shut down once the request has ended."""
        assert self.pending_end is not None
        cause, reason, at = self.pending_end
        if mono < at:
            return
        outcome = self.cancel_spot_request(cause, before_deadline=True)
        if outcome["cancelled"] or outcome["state"] == "none" or (cause == "deadline" and self.request_ended(outcome)):
            self.pending_end = None
            self.shutdown(reason)
        else:
            self.pending_end = (cause, reason, mono + bounds.value("spot_cancel_retry", self.s))

    def after_schedule_cancel(self, outcome: dict[str, Any]) -> bool:
        """At the deadline, after an own cancel that failed: may the watchdog shut down? Not before the stack's
        cancelling schedule has certainly fired (``spot_schedule_lead`` before the deadline, plus the Scheduler's
        ``spot_schedule_precision``), and then only when EC2 says the request has ended (one read, ``request_ended``).
        Otherwise no shutdown: the stack's terminating schedule ends this instance at the deadline, after its cancel.
        A shutdown from inside with the request still open would terminate this instance and re-open the request,
        which launches a new instance that carries no tags (so no deadline of its own) and that no schedule names."""
        fired = self.deadline - bounds.value("spot_schedule_lead") + bounds.value("spot_schedule_precision")
        wait = fired - self.clock.now()
        if wait > 0:
            self.decide("spot-request", f"waiting {wait:.0f} s, until {stamp(fired)}, for the stack's schedule to "
                        "cancel the request (it fires at the deadline less "
                        f"{bounds.value('spot_schedule_lead'):.0f} s, within {bounds.value('spot_schedule_precision'):.0f} s)")
            self.clock.sleep(wait)
        return self.request_ended(outcome)

    def request_ended(self, outcome: dict[str, Any]) -> bool:
        """One read of the request's state (``spot_request.request_state``), logged and recorded; True only when EC2
        says it is cancelled, closed or completed."""
        request = outcome.get("requestId")
        ended, detail = spot_request.request_state(self.s, self.own_instance_id(),
                                                   request if isinstance(request, str) else None, self.metadata, self.credentials,
                                                   self.clock.real(bounds.value("aws_call")))
        outcome.update(stateRead=detail, stateReadAt=stamp(self.clock.now()), requestEnded=ended)
        self.state["spot_request"] = outcome
        self._save_state(self.state)
        self.decide("spot-request", detail + (" -> shutting down" if ended else
                    " -> NOT shutting down (that would terminate this instance and re-open the request): the stack's "
                    "schedule terminates this instance at the deadline; the cancel is retried meanwhile"))
        return ended

    def own_instance_id(self) -> str | None:
        if self.claim.instance_id is not None:
            return self.claim.instance_id
        try:
            return self.metadata.value("/latest/meta-data/instance-id")
        except ca.MetadataError:
            return None

    def cancel_spot_request(self, cause: str, before_deadline: bool = False,
                            budget: float | None = None, to_manifest: bool = True) -> dict[str, Any]:
        """Cancel this instance's own spot request (AWS, ``spot_request``), record the outcome in the state and the
        run manifest. Not cancelled before the deadline: no shutdown, retried (``retry_pending_end``); at the
        deadline the shutdown follows whatever it is (the stack's schedule has cancelled it two minutes before)."""
        instance = self.own_instance_id()
        earlier = self.state.get("spot_request")
        known = earlier.get("requestId") if isinstance(earlier, dict) else None
        settings = self.s if budget is None else {**self.s, "spot_cancel_seconds": budget}
        outcome = spot_request.cancel_own_request(settings, instance, self.metadata, self.credentials,
                                                  real=self.clock.real, virtual=self.clock.virtual,
                                                  sleep=self.clock.sleep,
                                                  known=known if isinstance(known, str) else None)
        outcome.update(time=stamp(self.clock.now()), cause=cause)
        settled = outcome["cancelled"] or outcome["state"] == "none"
        if outcome.get("suspicious"):
            self.decide("spot-request", outcome["suspicious"])
        if settled:
            then = ""
        elif before_deadline:
            retry = bounds.value("spot_cancel_retry", self.s)
            then = (f" -> NOT shutting down (a shutdown would terminate this instance and open the request again): "
                    f"the cancel is retried every {retry:.0f} s, the shutdown follows it, or the deadline")
            outcome["outcome"] = "not cancelled: no shutdown, retrying"
        else:
            then = (" -> no shutdown before the stack's schedule has cancelled the request (read once it has "
                    "certainly fired)")
        self.decide("spot-request", outcome["detail"] + then)
        self.state["spot_request"] = outcome
        self._save_state(self.state)
        if to_manifest:
            manifest.record(self.s, "spotRequest", outcome, say=lambda m: self.decide("manifest", m),
                            timeout=self.clock.real(bounds.value("manifest_update")))
        return outcome

    def stop_awaited(self) -> bool:
        """Is the cloud's stop after a handled notice still awaited (``waiting_for_stop``, on the monotonic clock)?
        Only then is a SIGTERM the cloud's stop, which the request must survive; once the watchdog carries on as on a
        normal boot (the cloud did not act on the notice), a power-off is one from inside again."""
        return self.awaiting_stop is not None and self.clock.monotonic() < self.awaiting_stop

    def cancel_on_power_off(self) -> None:
        """SIGTERM outside the wait for the cloud's stop after a notice: a power-off from inside (``shutdown -h``, a job's poweroff) ends
        this instance (``instance_initiated_shutdown_behavior = terminate``) and would open its persistent
        request again, so the request is cancelled before the final sync; a reboot, or the service alone being
        stopped, keeps it (``spot_request.powering_off``)."""
        verdict, seen = spot_request.powering_off(list(self.s["system_jobs_command"]),
                                                  self.clock.real(bounds.value("system_jobs_query")))
        if not verdict:
            self.decide("stopping", f"not a power-off ({seen}): the spot request is kept")
            return
        self.decide("stopping", f"the system is powering off ({seen}) -> cancel this instance's spot request first")
        self.cancel_spot_request("power-off", budget=bounds.value("spot_cancel_on_stop", self.s), to_manifest=False)
