#!/usr/bin/env python3
"""gpulease-watchdog: the instance-side guard for one experiment (standard library only).

Runs as a systemd service (``Restart=always``) and reads its settings from the JSON file that user-data writes
(``/etc/gpulease/settings.json``; ``GPULEASE_SETTINGS`` points elsewhere). Each tick it checks, in order:

1. the hard deadline, read on every poll from the instance's own ``gpulease:expires-at`` tag through the metadata
   service, and on Alibaba Cloud (``deadline_api``) through the ECS API when metadata does not list it (so a
   renewal reaches a running instance with no user-data change): the warning hook ``warn_minutes`` before it,
   then the checkpoint hook, a final sync of ``<mount>/checkpoints`` (retried until the window closes) and a
   shutdown ``final_sync_minutes`` before it. When neither answers, the last deadline read (kept in
   ``<state_dir>/watchdog-state.json``) holds, and before any was read: first boot + ``max_runtime_hours``;
2. a spot interruption notice (AWS IMDSv2 instance-action / rebalance, Alibaba termination-time): checkpoint
   hook, sync, shutdown, all fitted into the notice window; a rebalance recommendation's checkpoint runs beside
   the loop, which keeps watching the deadline and the notice. On a cluster node the notice is passed to every
   peer first, and a peer's notice starts the same sequence here (``instance/cluster.py``). With spot recovery
   (``spot_recover``: a persistent request that stops on a reclaim) the notice runs the hook and the sync and
   never shuts down: the cloud stops the instance and starts it again; past ``spot_stop_wait`` after the window
   it carries on as on a normal boot. The watchdog's own end then cancels its own spot request first on AWS
   (``spot_request``): at the deadline the shutdown follows whatever the answer; before it (idle, budget) a cancel
   that failed means no shutdown, the cancel retried every ``spot_cancel_retry`` until it succeeds or the deadline
   comes. At the deadline a cancel that failed means no shutdown before the stack's cancelling schedule has
   certainly fired, and then only when EC2 says the request has ended. A SIGTERM while the system powers off
   (not a reboot), unless the cloud's stop after a notice is awaited, cancels it too;
3. idle: GPU utilization (CPU on a preparation instance, ``idle_source = cpu``) below ``idle_gpu_percent``
   (``idle_cpu_percent``) for ``idle_minutes`` with no busy marker and no live SSH
   session: sync, then shutdown. A GPU that cannot be read (nvidia-smi missing, failing, printing [N/A]) is
   reported, and after ``gpu_grace_minutes`` counts as idle;
4. the periodic checkpoint sync every ``checkpoint_interval_minutes``, in the background; one that runs past
   ``sync_timeout_minutes`` is killed and retried.

On Alibaba Cloud a shutdown from inside only stops a pay-as-you-go instance, which keeps billing; so after the
final sync the watchdog releases its own instance through the ECS API (``DeleteInstance``, Force), falling back
to a stop in no-charge mode (``StopInstance``, StopCharging), then to a plain shutdown (the instance's release
time ends it). Every external action is bounded in wall-clock time (its process group is killed at the bound,
its output goes to a file); durations are measured on the monotonic clock, the deadline (an instant in UTC) on
the wall clock. Every decision is logged with its reason. ``GPULEASE_CLOCK_SPEED`` / ``GPULEASE_CLOCK_START``
accelerate the clock so that the whole behaviour can be exercised in seconds.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

try:
    from instance import (
        bounds,
        deadline_rule,
        heartbeat,
        idle_rule,
        log_upload,
        manifest,
        spot_request,
        spot_rule,
        sync_rule,
    )
    from instance import cloud_access as ca
    from instance import cluster as cl
    from instance import instance_state as st
    from instance.clock import Clock
except ImportError:  # on the instance: the other tools are installed next to this file
    import bounds  # type: ignore[no-redef]
    import cloud_access as ca  # type: ignore[no-redef]
    import cluster as cl  # type: ignore[no-redef]
    import deadline_rule  # type: ignore[no-redef]
    import heartbeat  # type: ignore[no-redef]
    import idle_rule  # type: ignore[no-redef]
    import instance_state as st  # type: ignore[no-redef]
    import log_upload  # type: ignore[no-redef]
    import manifest  # type: ignore[no-redef]
    import spot_request  # type: ignore[no-redef]
    import spot_rule  # type: ignore[no-redef]
    import sync_rule  # type: ignore[no-redef]
    from clock import Clock  # type: ignore[no-redef]

__all__ = ["Clock", "Watchdog", "configure_logging", "load_settings", "main", "stamp"]

SETTINGS_PATH = "/etc/gpulease/settings.json"

DEFAULTS: dict[str, Any] = {
    "cloud": "aws",
    "region": "",
    "market": "spot",
    "mount_point": "/data",
    "max_runtime_hours": 8,
    "deadline_tag": "gpulease:expires-at",
    "boot_time": None,
    "state_dir": "/var/lib/gpulease",
    "idle_minutes": 30,
    "idle_gpu_percent": 5,
    "idle_source": "gpu",
    "idle_cpu_percent": 10,
    "idle_check_seconds": 60,
    "gpu_grace_minutes": 10,
    "warn_minutes": 15,
    "warn_hook": None,
    "final_sync_minutes": 5,
    "checkpoint_uri": None,
    "checkpoint_interval_minutes": 15,
    "sync_timeout_minutes": None,
    "checkpoint_hook": None,
    "checkpoint_signal": None,
    "checkpoint_process": None,
    "hook_timeout_seconds": 120,
    "busy_marker": "/data/busy",
    "busy_marker_max_age_minutes": 0,
    "on_rebalance": "checkpoint",
    "poll_seconds": 5,
    "metadata_url": None,
    "metadata_timeout_seconds": 2,
    "sync_command": None,
    "self_release": False,
    "deadline_api": False,
    "deadline_api_seconds": 60,
    "ecs_endpoint": None,
    "shutdown_command": ["shutdown", "-h", "now"],
    "nvidia_smi": "nvidia-smi",
    "proc_root": "/proc",
    "log_file": None,
    "exit_after_shutdown": False,
    # Spot recovery (a persistent request that stops on a reclaim): a notice saves and syncs but never shuts down;
    # the watchdog's own end cancels its own request first (AWS). Only a JSON true turns it on.
    "spot_recover": False,
    "aws_command": "aws",
    # Asked on SIGTERM with spot recovery on AWS: is the system powering off (not rebooting)? (spot_request)
    "system_jobs_command": ["systemctl", "list-jobs", "--no-legend"],
}

# A notice whose time cannot be read still leaves the documented minimum: two minutes on AWS, five on Alibaba.
NOTICE_WINDOW_SECONDS = spot_rule.NOTICE_WINDOW_SECONDS
# Kept free at the end of a window for the shutdown itself.
SHUTDOWN_RESERVE_SECONDS = bounds.value("shutdown_reserve")
# An idle shutdown has no window of its own: its final sync may retry this long (and never past the deadline).
IDLE_SYNC_WINDOW_SECONDS = bounds.value("idle_sync_window")
# How often this boot's "still running" time is written (the spend counts running time only, boot by boot).
ALIVE_EVERY_SECONDS = bounds.value("alive_every")

log = logging.getLogger("gpulease-watchdog")
stamp = ca.utc_stamp
parse_time = ca.parse_time
SSH_SESSION = idle_rule.SSH_SESSION


# --- the watchdog --------------------------------------------------------------------------------------------


class Watchdog:
    """The loop: each tick asks the rules (``deadline_rule``, ``spot_rule``, ``idle_rule``, ``sync_rule``, and the
    heartbeat's ``budget_rule``) and carries out what they conclude; the rules hold no process and no network."""

    def __init__(self, settings: dict[str, Any], clock: Clock | None = None):
        self.s = {**DEFAULTS, **settings}
        self.clock = clock or Clock()
        self.cloud = self.s["cloud"]
        self.metadata = ca.Metadata(
            self.cloud, self.s["metadata_url"], float(self.s["metadata_timeout_seconds"]),
            monotonic=self.clock.monotonic, real=self.clock.real,
        )
        self.credentials = ca.RoleCredentials(self.metadata, clock=self.clock.now)
        self.deadline_reader = ca.InstanceDeadline(
            self.metadata, self.credentials, tag=self.s["deadline_tag"], region=self.s["region"],
            api=bool(self.s["deadline_api"]) and self.cloud == "alicloud", endpoint=self.s["ecs_endpoint"],
            timeout=bounds.value("ecs_read"), api_interval=float(self.s["deadline_api_seconds"]),
            monotonic=self.clock.monotonic,
            real=self.clock.real,
        )
        mono = self.clock.monotonic()
        self.claim = self._claim()
        self.next_claim = mono + bounds.value("instance_id_reclaim")  # the id unreadable now: asked again from then on
        self.state = self._load_state()
        self.deadline_rule = deadline_rule.DeadlineRule(self.s, self.state, self.deadline_reader.read,
                                                        lambda: self._save_state(self.state), self.decide)
        progress, seen = st.setup_gate(self.s, lambda: self.claim.boot)  # whether or when the id can be read
        self.idle = idle_rule.IdleRule(self.s, mono, progress, seen, self.clock.now,
                                       lambda pid: idle_rule.process_running(self.s["proc_root"], pid),
                                       boot=self._boot_time())
        self.cpu_meter = idle_rule.CpuMeter(self.s["proc_root"])
        self.sync = sync_rule.SyncSchedule(self.s, mono)
        self.last_idle_check = float("-inf")
        self.last_poll = float("-inf")
        self.last_alive = mono
        self.sync_job: ca.Bounded | None = None
        self.sync_storage: ca.StorageCall | None = None
        self.rebalance_seen = False
        self.rebalance_thread: threading.Thread | None = None
        self.cancel = threading.Event()
        self.metadata_failing = False
        self.shutdown_at: float | None = None
        # Spot recovery: on only for a spot instance whose settings say exactly true (a string "false" is not true).
        self.recover = self.s["spot_recover"] is True and self.s["market"] == "spot"
        self.awaiting_stop: float | None = None
        """After a notice with recovery on: until when (monotonic) the cloud's stop is waited for (nothing else
        runs but the deadline)."""
        self.pending_end: tuple[str, str, float] | None = None
        """An end whose spot request could not be cancelled: (cause, reason, next try at, monotonic). No shutdown
        until the cancel succeeds (or, at the deadline, EC2 says the request has ended); before the deadline, until
        the deadline comes."""
        self.notice_end: float | None = None
        self.handled_notice: str | None = None
        self.started = False
        self.done = False
        self.heartbeat = heartbeat.Heartbeat(self)  # heartbeat.json every few minutes, and the spend estimate
        self.logs = log_upload.LogUploader(self)  # the log files to the bucket, beside the loop
        # A cluster node: peers' spot notices reach this watchdog, and its own reach them (instance/cluster.py). It
        # listens on its own private address only, never on a public one, whatever the security group allows.
        self.cluster: cl.ClusterNotices | None = None
        if self.s.get("cluster"):
            own = self.s["cluster"]["addresses"][int(self.s["cluster"]["rank"])]
            self.cluster = cl.ClusterNotices(
                self.s, log=self.decide, marker_io=self.marker_io, monotonic=self.clock.monotonic, now=self.clock.now,
                not_before=float(self.state["first_boot"]), bind=self.s.get("notice_bind") or str(own),
            )

    # -- what the rules share: this instance's state --

    @property
    def deadline(self) -> float:
        return self.deadline_rule.deadline

    @property
    def deadline_source(self) -> str:
        return self.deadline_rule.source

    @property
    def sync_failures(self) -> int:
        return self.sync.failures

    @property
    def last_sync_ok(self) -> float | None:
        return self.sync.last_ok

    def _boot_time(self) -> float:
        return st.boot_time(self.s, self.clock.now())

    def _claim(self) -> st.Claim:
        """Whose state is in state_dir (``instance_state``): a new instance id starts clean, the same id on a new
        boot resumes."""
        claim = st.claim_for(self.s, lambda: self.metadata.value("/latest/meta-data/instance-id"), self.clock.now(),
                             warn=lambda m: self.decide("state", m))
        instance = claim.instance_id
        if claim.kind == "unknown-id":
            self.decide("state", "this instance's id cannot be read (metadata, cloud-init): the state is kept as it is")
        elif claim.kind == "first-boot" and claim.moved:
            self.decide("state", f"new instance {instance}: the state of {claim.previous_id or 'an unknown instance'} "
                        f"moved to {st.PREVIOUS_DIR}/ ({', '.join(claim.moved)}); starting clean")
        elif claim.kind == "resumed" and claim.after == "spot-reclaim":
            last = claim.interruptions[-1] if claim.interruptions else {}
            self.decide("resumed", f"instance {instance} booted again: stopped {last.get('stoppedAt')} for "
                        f"{last.get('stoppedSeconds')} s; the deadline and the spend continue")
        elif claim.kind == "resumed":
            self.decide("resumed", f"instance {instance} booted again with no stop announced before (a reboot): the "
                        "time since its last sign of life counts as running; the deadline and the spend continue")
        return claim

    def _reclaim(self) -> None:
        """The id was unreadable when the watchdog started: claim the state as soon as it can be read."""
        if st.id_readable(self.s, lambda: self.metadata.value("/latest/meta-data/instance-id")):
            self.claim = self._claim()
            self.state = self._load_state()
            self.deadline_rule.rebase(self.state)
            self.heartbeat.warned = heartbeat.budget_rule.warned_from_state(self.state)

    def _state_path(self) -> str:
        return os.path.join(self.s["state_dir"], ca.WATCHDOG_STATE_FILE)

    def _load_state(self) -> dict[str, Any]:
        state = st.read_or_empty(self._state_path(), warn=lambda m: self.decide("state", m))
        state, set_aside = st.usable_state(state, self.claim, self._boot_time())
        if set_aside:
            self.decide("state", set_aside)
        if st.epoch(state.get("first_boot")) is None:
            if "first_boot" in state:
                self.decide("state", f"{self._state_path()}: first_boot: {str(state['first_boot'])[:40]!r} is not a "
                            "time; treated as unknown")
            first = st.epoch(self.claim.identity.get("firstBoot"))
            state["first_boot"] = first if first is not None else self._boot_time()
            self._save_state(state)
        return state

    def _save_state(self, state: dict[str, Any]) -> None:
        try:
            st.write_state_file(self._state_path(), state)
        except OSError as exc:
            log.info("state: cannot write %s: %s", self._state_path(), exc)

    def running_seconds(self, now: float) -> float:
        """How long this instance has run (all its boots, stopped intervals not counted)."""
        if self.claim.instance_id is None:
            return max(0.0, now - float(self.state["first_boot"]))
        return self.claim.running_seconds(now)

    def refresh_deadline(self) -> None:
        self.deadline_rule.refresh()

    # -- the loop --

    def run(self, max_ticks: int | None = None) -> None:
        if not self.started:
            self.started = True
            self.start()
        ticks = 0
        while not self.done and (max_ticks is None or ticks < max_ticks):
            try:
                self.tick()
            except Exception as exc:  # one bad tick must never end the guard
                log.exception("tick failed: %s", exc)
            ticks += 1
            if not self.done:
                self.clock.sleep(float(self.s["poll_seconds"]))

    def start(self) -> None:
        if self.cluster is not None:
            self.cluster.start()
        self.refresh_deadline()
        self.decide(
            "start",
            f"deadline {stamp(self.deadline)} ({self.deadline_source}), idle after {self.s['idle_minutes']} min below "
            + (f"{self.s['idle_cpu_percent']}% CPU" if self.s.get("idle_source") == "cpu" else f"{self.s['idle_gpu_percent']}% GPU")
            + f", sync every {self.s['checkpoint_interval_minutes']} min to "
            f"{self.s['checkpoint_uri'] or 'nowhere (no checkpoint URI)'}, market {self.s['market']}"
            + (" (spot recovery: a notice saves and syncs, the cloud stops and restarts this instance)"
               if self.recover else ""),
        )

    def tick(self) -> None:
        mono = self.clock.monotonic()
        self._guarded("sync", self._check_sync)  # each rule on its own: one that raises never stops the others
        self._guarded("heartbeat", self.heartbeat.tick)
        self._guarded("log upload", self.logs.tick)
        if mono - self.last_alive >= ALIVE_EVERY_SECONDS:
            self.last_alive = mono
            try:
                st.alive(self.s["state_dir"], self.claim, self.clock.now())
            except OSError as exc:
                self.decide("state", f"cannot record this boot's running time: {exc}")
        if self.shutdown_at is not None:
            # Still alive after a shutdown was requested: ask again every minute.
            if mono - self.shutdown_at >= 60:
                self.shutdown("the earlier shutdown request has not taken effect")
            return
        polling = mono - self.last_poll >= float(self.s["poll_seconds"])
        if polling:
            self.last_poll = mono
            if self.claim.instance_id is None and mono >= self.next_claim:
                self.next_claim = mono + bounds.value("instance_id_reclaim")
                self._guarded("id claim", self._reclaim)
            self._guarded("deadline read", self.refresh_deadline)
        now = self.clock.now()
        if self.pending_end is not None and self.pending_end[0] == "deadline":
            self.retry_pending_end(mono)  # the deadline's end is under way: only its cancel is retried
            return
        if now >= self.deadline_rule.final_at():
            self.finish(
                "deadline",
                f"deadline {stamp(self.deadline)} is {max(0, self.deadline - now) / 60:.1f} min away "
                f"(final sync starts {self.s['final_sync_minutes']} min before it)",
                window_end=self.deadline,
            )
            return
        if self.awaiting_stop is not None and self.waiting_for_stop(mono):
            return
        if self.pending_end is not None:
            self.retry_pending_end(mono)
            return
        if self.deadline_rule.due_warning(now):
            self.decide("deadline-warning", f"deadline {stamp(self.deadline)} is {(self.deadline - now) / 60:.1f} min away")
            if self.s["warn_hook"]:
                self.run_command("warn-hook", self.s["warn_hook"], float(self.s["hook_timeout_seconds"]), "deadline")
        if self.cluster is not None and polling and self._guarded("cluster", self.check_cluster):
            return
        if self.s["market"] == "spot" and polling and self._guarded("spot", self.check_spot):
            return
        if mono - self.last_idle_check >= float(self.s["idle_check_seconds"]):
            self.last_idle_check = mono
            if self._guarded("idle", self.check_idle, mono):
                return
        if self._guarded("sync", self.sync.due, mono):
            self._guarded("sync", self.start_periodic_sync)

    def _guarded(self, rule: str, step: Callable[..., Any], *args: Any) -> Any:
        """``step(*args)``; when it raises, the failure is logged naming the rule, and the tick goes on (None)."""
        try:
            return step(*args)
        except Exception as exc:  # one rule's failure must not stop the deadline, the idle check or the sync
            log.exception("%s rule failed: %s: %s", rule, type(exc).__name__, exc)
            return None

    # -- decisions --

    def decide(self, event: str, reason: str) -> None:
        log.info("%s: %s", event, reason)

    def finish(self, cause: str, reason: str, window_end: float | None, hook: bool = True) -> None:
        """Checkpoint hook, final sync, release or shutdown, in that order, each fitted into the time left. With
        spot recovery on AWS the watchdog's own end cancels its own spot request first (``spot_request``)."""
        cancel = self.recover and self.cloud == "aws"
        self.decide(cause, reason + " -> " + ("cancel this instance's spot request, " if cancel else "")
                    + ("checkpoint hook, " if hook else "") + "final sync, shutdown")
        self.stop_background()
        settled = True
        if cancel:
            outcome = self.cancel_spot_request(cause, before_deadline=cause != "deadline")
            settled = outcome["cancelled"] or outcome["state"] == "none"
        if hook:
            self.checkpoint_hook(cause, window_end)
        if window_end is None:
            window_end = min(self.deadline, self.clock.now() + IDLE_SYNC_WINDOW_SECONDS)
        self.final_sync(window_end)
        self.flush_logs(window_end)
        if not settled and cause == "deadline":
            settled = self.after_schedule_cancel(outcome)
        if not settled:
            # A shutdown from inside terminates the instance, and a persistent request whose instance is terminated
            # opens again and launches a new one, untagged, that nothing of this experiment ends: so no shutdown
            # until the request is cancelled. Before the deadline the deadline comes; at it the stack's schedule
            # terminates this instance (after its cancelling one), and the cancel is retried meanwhile.
            self.pending_end = (cause, reason, self.clock.monotonic() + bounds.value("spot_cancel_retry", self.s))
            return
        if self.s["self_release"] and self.cloud == "alicloud":
            self.release(reason)
        else:
            self.shutdown(reason)

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

    def marker_io(self, direction: str, src: str, dst: str) -> bool:
        """Copy the cluster's notice marker to (``put``) or from (``get``) the bucket, bounded to a minute."""
        template = (self.s.get("cluster") or {}).get("copy_command")
        if not template:
            return False
        try:
            call = ca.storage_command(list(template), {"src": src, "dst": dst}, cloud=self.cloud, region=self.s["region"],
                                      metadata=self.metadata, credentials=self.credentials,
                                      private_dir=self.s.get("secret_dir"))
        except (ca.CredentialsError, OSError) as exc:
            self.decide("cluster-notice", f"no credentials for the storage CLI: {exc}")
            return False
        try:
            code, _ = ca.run_bounded(call.argv, self.clock.real(bounds.value("cluster_notice_copy")),
                                     env=call.env)
        finally:
            call.close()
        return code == 0

    def _rebalance_checkpoint(self) -> None:
        """Beside the loop: the loop keeps watching the deadline and the interruption notice meanwhile."""
        self.checkpoint_hook("rebalance", None)
        if not self.cancel.is_set():
            self._stop_periodic_sync()
            self.sync_once("rebalance-sync", self.sync.timeout)
            self.sync.last = self.clock.monotonic()

    def flush_logs(self, window_end: float) -> None:
        """The last log lines to the bucket before the end: within ``log_flush`` and what the window leaves."""
        left = window_end - self.clock.now() - SHUTDOWN_RESERVE_SECONDS
        self.logs.flush(max(0.0, min(bounds.value("log_flush", self.s), left)))

    def stop_background(self) -> None:
        """End what runs beside the loop (a rebalance checkpoint, a periodic sync) to make way for the final one."""
        thread = self.rebalance_thread
        if thread is not None and thread.is_alive():
            self.cancel.set()
            thread.join(timeout=bounds.value("rebalance_join"))
            self.decide("spot-rebalance", "the rebalance checkpoint was cut short to make way for the final sequence")
        self.cancel = threading.Event()
        self._stop_periodic_sync()

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

    # -- actions --

    def run_command(self, what: str, command: str | list[str], timeout: float, reason: str,
                    env: dict[str, str] | None = None) -> bool:
        """Run a hook or command for at most ``timeout`` (virtual) seconds, whatever it leaves behind."""
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else command
        env = {**(env or os.environ), "GPULEASE_REASON": reason, "GPULEASE_CHECKPOINT_DIR": self.checkpoint_dir}
        if self.cluster is not None:  # a hook can tell rank 0 (which writes the shared checkpoint) from the others
            env.update(GPULEASE_NODE_RANK=str(self.cluster.rank), GPULEASE_NNODES=str(self.cluster.cluster["nodes"]))
        started = time.monotonic()
        code, tail = ca.run_bounded(argv, self.clock.real(timeout), env=env, cancel=self.cancel)
        took = self.clock.virtual(time.monotonic() - started)
        if code is None:
            self.decide(what, f"did not finish within {timeout:.0f} s (or was cut short); its process group was killed")
            return False
        self.decide(what, f"exited {code} after {took:.0f} s" + (f": {tail}" if tail else ""))
        return code == 0

    def checkpoint_hook(self, reason: str, window_end: float | None) -> None:
        hook, sig, process = self.s["checkpoint_hook"], self.s["checkpoint_signal"], self.s["checkpoint_process"]
        if not hook and not sig:
            self.decide("checkpoint-hook", "none configured; syncing what is in the checkpoint directory")
            return
        budget = float(self.s["hook_timeout_seconds"])
        if window_end is not None:
            # Leave at least half of what remains of the notice window to the sync.
            budget = max(1.0, min(budget, (window_end - self.clock.now() - SHUTDOWN_RESERVE_SECONDS) / 2))
        if hook:
            self.run_command("checkpoint-hook", hook, budget, reason)
        if sig and not self.cancel.is_set():
            self.signal_process(sig, process, budget)

    def signal_process(self, sig_name: str, pattern: str, budget: float) -> None:
        """``sig_name`` to every training process whose command line contains ``pattern``, never to a launcher
        (``_launcher``: torchrun's elastic agent handles only SIGTERM, SIGINT, SIGHUP and SIGQUIT, and the
        default action of SIGUSR1/SIGUSR2 ends it, and with it every worker)."""
        signum = getattr(signal, sig_name, None)
        matching = [pid for pid, cmd in _processes(self.s["proc_root"]) if pattern in cmd and pid != os.getpid()]
        launchers = [pid for pid in matching if _launcher(_argv(self.s["proc_root"], pid))]
        pids = [pid for pid in matching if pid not in launchers]
        if launchers:
            self.decide("checkpoint-signal", f"not signalling the launcher(s) {launchers} matching {pattern!r} "
                        "(torchrun / torch.distributed.run, or a shell): only the processes they started")
        if signum is None or not pids:
            self.decide("checkpoint-signal", f"no process matching {pattern!r} to send {sig_name} to")
            return
        for pid in pids:
            try:
                os.kill(pid, signum)
            except OSError as exc:
                self.decide("checkpoint-signal", f"{sig_name} to {pid} failed: {exc}")
        self.decide("checkpoint-signal", f"sent {sig_name} to {pids} ({pattern!r}); waiting up to {budget:.0f} s for them to exit")
        end = time.monotonic() + self.clock.real(budget)
        while time.monotonic() < end and not self.cancel.is_set():
            if not [pid for pid in pids if _alive(pid)]:
                self.decide("checkpoint-signal", f"{pattern!r} exited")
                return
            time.sleep(bounds.value("signal_poll"))
        self.decide("checkpoint-signal", f"{pattern!r} still running after {budget:.0f} s; syncing anyway")

    @property
    def checkpoint_dir(self) -> str:
        return os.path.join(self.s["mount_point"], "checkpoints")

    def sync_call(self) -> ca.StorageCall | None:
        """The sync command with its credential source, or None (logged) when there is nothing to sync."""
        uri, template = self.s["checkpoint_uri"], self.s["sync_command"]
        if not uri or not template:
            return None
        if not os.path.isdir(self.checkpoint_dir):
            self.decide("sync", f"{self.checkpoint_dir} does not exist yet; nothing to sync")
            return None
        try:
            return ca.storage_command(
                list(template), {"src": self.checkpoint_dir, "dst": uri}, cloud=self.cloud, region=self.s["region"],
                metadata=self.metadata, credentials=self.credentials, private_dir=self.s.get("secret_dir"),
            )
        except (ca.CredentialsError, OSError) as exc:
            self.decide("sync", f"no credentials for the storage CLI: {exc}")
            return None

    def start_periodic_sync(self) -> None:
        if self.sync_job is not None:
            self.decide("sync", "the previous periodic sync is still running; skipping this one")
            return
        if self.rebalance_thread is not None and self.rebalance_thread.is_alive():
            return
        call = self.sync_call()
        if call is None:
            return
        try:
            self.sync_job, self.sync_storage = ca.Bounded(call.argv, env=call.env, monotonic=self.clock.monotonic), call
        except OSError as exc:
            call.close()
            self.decide("sync", f"periodic sync could not start: {exc}")
            return
        self.decide("sync", f"periodic sync started ({self.s['checkpoint_interval_minutes']} min interval)")

    def _check_sync(self) -> None:
        job = self.sync_job
        if job is None:
            return
        code = job.poll()
        if code is None:
            limit = self.sync.timeout
            if not self.sync.overdue(job.started, self.clock.monotonic()):
                return
            job.kill()
            # Retried at the next poll rather than a whole interval later: the checkpoints are not safe yet.
            self.sync.killed(self.clock.monotonic())
            self.decide("sync", f"periodic sync still running after {limit / 60:g} min: killed with its process group; "
                        "retrying now")
        else:
            self.sync.ended(code, self.clock.now())
            tail = job.tail()
            self.decide("sync", f"periodic sync exited {code}" + (f": {tail}" if tail else ""))
        self._end_sync()

    def _end_sync(self) -> None:
        if self.sync_job is not None:
            self.sync_job.finish()
        if self.sync_storage is not None:
            self.sync_storage.close()  # removes the credentials file an ossutil call was given
        self.sync_job = self.sync_storage = None

    def _stop_periodic_sync(self) -> None:
        job = self.sync_job
        if job is not None and job.poll() is None:
            job.kill()
            self.decide("sync", "periodic sync stopped to make way for the final sync")
            self._end_sync()
        self._check_sync()

    def sync_once(self, what: str, budget: float) -> bool:
        call = self.sync_call()
        if call is None:
            return False
        try:
            return self.run_command(what, call.argv, budget, "final", env=call.env)
        finally:
            call.close()

    def final_sync(self, window_end: float) -> bool:
        """Sync, retried with backoff until it succeeds or the window (less the shutdown reserve) closes."""
        if not self.s["checkpoint_uri"] or not self.s["sync_command"]:
            self.decide("final-sync", "no checkpoint URI; nothing to sync")
            return False
        budget = max(5.0, window_end - self.clock.now() - SHUTDOWN_RESERVE_SECONDS)
        spent, attempt = 0.0, 0
        while True:
            attempt += 1
            started = time.monotonic()
            ok = self.sync_once("final-sync", budget - spent)
            spent += self.clock.virtual(time.monotonic() - started)
            if ok:
                return True
            if not os.path.isdir(self.checkpoint_dir):
                return False
            pause = min(30.0, 5.0 * 2 ** (attempt - 1))
            if spent + pause >= budget - 1:
                self.decide("final-sync", f"attempt {attempt} failed and the window closes: giving up")
                return False
            self.decide("final-sync", f"attempt {attempt} failed; retrying in {pause:.0f} s "
                        f"({budget - spent:.0f} s of the window left)")
            self.clock.sleep(pause)
            spent += pause

    def release(self, reason: str) -> None:
        """Alibaba Cloud: end billing by releasing this instance; stop in no-charge mode, then shut down, if not."""
        self.shutdown_at = self.clock.monotonic()
        region, endpoint = self.s["region"], self.s["ecs_endpoint"]
        try:
            instance = self.metadata.value("/latest/meta-data/instance-id")
            if not instance:
                raise ca.MetadataError("no instance-id in the metadata")
            creds = self.credentials.get()
            for action, params, done in (
                ("DeleteInstance", {"InstanceId": instance, "Force": "true"}, "released through DeleteInstance (Force)"),
                ("StopInstance", {"InstanceId": instance, "ForceStop": "true", "StoppedMode": "StopCharging"},
                 "stopped in no-charge mode (StopInstance, StopCharging); the release time ends it"),
            ):
                try:
                    status, answer = ca.ecs_call(action, params, creds, region=region, endpoint=endpoint,
                                                 timeout=self.clock.real(bounds.value("ecs_call")))
                except ca.HttpError as exc:
                    status, answer = 0, {"Message": str(exc)}
                if status == 200:
                    self.decide("release", f"{reason}: instance {instance} {done}")
                    if action == "DeleteInstance":
                        if self.s["exit_after_shutdown"]:
                            self.done = True
                        return
                    break
                self.decide("release", f"{action} answered {status}: {answer.get('Code', '')} "
                            f"{str(answer.get('Message', ''))[:200]}")
        except (ca.MetadataError, ca.CredentialsError) as exc:
            self.decide("release", f"cannot call the ECS API: {exc}")
        self.decide("release", "falling back to a shutdown; the instance's release time is the backstop")
        self.shutdown(reason)

    def shutdown(self, reason: str) -> None:
        self.shutdown_at = self.clock.monotonic()
        self.decide("shutdown", reason)
        ok = self.run_command("shutdown-command", list(self.s["shutdown_command"]), 60, reason)
        if ok and self.s["exit_after_shutdown"]:
            self.done = True

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

    def stop(self) -> None:
        """SIGTERM (a shutdown from elsewhere, a restart): one last sync of what is there."""
        if self.shutdown_at is None and self.recover and self.cloud == "aws" and not self.stop_awaited():
            self.cancel_on_power_off()
        if self.shutdown_at is None and self.s["checkpoint_uri"]:
            self.decide("stopping", "the service is being stopped -> final sync")
            self.stop_background()
            self.sync_once("final-sync", bounds.value("final_sync_on_stop"))
        self.heartbeat.stop()
        self.logs.stop()
        if self.cluster is not None:
            self.cluster.stop()
        self.done = True


# --- helpers -------------------------------------------------------------------------------------------------


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def _processes(proc_root: str) -> list[tuple[int, str]]:
    out = []
    try:
        names = os.listdir(proc_root)
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc_root, name, "cmdline"), "rb") as fh:
                raw = fh.read()
        except OSError:
            continue
        if raw:
            out.append((int(name), raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()))
    return out


SHELLS = ("sh", "bash", "dash", "zsh")
"""A shell whose ``-c`` command names the script is a wrapper, not the training process (SIGUSR1 ends it)."""
LAUNCHER_NAMES = ("torchrun",)
LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch")
"""torchrun and its module forms: the elastic agent that starts the training processes (its argv names the script
too, so a substring match reaches it)."""


def _argv(proc_root: str, pid: int) -> list[str]:
    try:
        with open(os.path.join(proc_root, str(pid), "cmdline"), "rb") as fh:
            raw = fh.read(64 * 1024)
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def _launcher(argv: list[str]) -> bool:
    """Whether ``argv`` is torchrun's agent (``torchrun …``, ``python …/torchrun …``, ``python -m
    torch.distributed.run …``, options before ``-m`` allowed) or a shell wrapping the command."""
    if not argv:
        return False
    if os.path.basename(argv[0]) in LAUNCHER_NAMES + SHELLS:
        return True
    if not os.path.basename(argv[0]).startswith("python"):
        return False
    words = iter(argv[1:])
    for word in words:
        if word in ("-X", "-W"):  # options that take a value
            next(words, None)
        elif word == "-m":
            return next(words, None) in LAUNCHER_MODULES
        elif word.startswith("-m"):
            return word[2:] in LAUNCHER_MODULES
        elif word == "-c":
            return False
        elif not word.startswith("-"):
            return os.path.basename(word) in LAUNCHER_NAMES
    return False


def _cmdlines(proc_root: str) -> list[str]:
    return [cmd for _, cmd in _processes(proc_root)]


def _alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)  # reaps a child of ours (tests); others raise ChildProcessError
        if waited == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _ClockFormatter(logging.Formatter):
    def __init__(self, clock: Clock):
        super().__init__("%(asctime)s %(message)s")
        self.clock = clock

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802 - logging API
        return stamp(self.clock.now())


class _LogFile(logging.Handler):
    """Appends to ``<mount>/logs/watchdog.log`` once the data disk is mounted, to /var/log before that."""

    def __init__(self, paths: list[str]):
        super().__init__()
        self.paths = paths

    def emit(self, record: logging.LogRecord) -> None:
        line = self.format(record) + "\n"
        for path in self.paths:
            if os.path.isdir(os.path.dirname(path)):
                try:
                    with open(path, "a", encoding="utf-8") as fh:
                        fh.write(line)
                    return
                except OSError:
                    continue


def configure_logging(settings: dict[str, Any], clock: Clock) -> None:
    merged = {**DEFAULTS, **settings}
    paths = [merged["log_file"]] if merged["log_file"] else [
        os.path.join(merged["mount_point"], "logs", "watchdog.log"),
        "/var/log/gpulease-watchdog.log",
    ]
    formatter = _ClockFormatter(clock)
    log.handlers.clear()
    for handler in (logging.StreamHandler(sys.stdout), _LogFile(paths)):
        handler.setFormatter(formatter)
        log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def load_settings(path: str) -> dict[str, Any]:
    """The settings, read strictly (see ``cloud_access.load_settings``); they must name the cloud."""
    return ca.load_settings(path, required=("cloud", "max_runtime_hours"))


def main(argv: list[str] | None = None) -> int:
    path = os.environ.get("GPULEASE_SETTINGS", SETTINGS_PATH)
    clock = Clock.from_env(dict(os.environ))
    try:
        settings = load_settings(path)
    except ca.SettingsError as exc:
        print(f"gpulease-watchdog: cannot read settings: {exc}", file=sys.stderr, flush=True)
        return 2
    configure_logging(settings, clock)
    dog = Watchdog(settings, clock)

    def on_term(signum: int, frame: Any) -> None:
        dog.stop()
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_term)
    dog.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
