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

import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

try:
    from instance import bounds, deadline_rule, heartbeat, idle_rule, log_upload, sync_rule
    from instance import cloud_access as ca
    from instance import cluster as cl
    from instance import instance_state as st
    from instance.clock import Clock
    from instance.watchdog_defaults import ALIVE_EVERY_SECONDS, DEFAULTS, SETTINGS_PATH, log, stamp
    from instance.watchdog_end import EndMixin
    from instance.watchdog_idle import IdleMixin
    from instance.watchdog_log import configure_logging
    from instance.watchdog_spot import SpotMixin
    from instance.watchdog_sync import SyncMixin
except ImportError:  # on the instance: the other tools are installed next to this file
    import bounds  # type: ignore[no-redef]
    import cloud_access as ca  # type: ignore[no-redef]
    import cluster as cl  # type: ignore[no-redef]
    import deadline_rule  # type: ignore[no-redef]
    import heartbeat  # type: ignore[no-redef]
    import idle_rule  # type: ignore[no-redef]
    import instance_state as st  # type: ignore[no-redef]
    import log_upload  # type: ignore[no-redef]
    import sync_rule  # type: ignore[no-redef]
    from clock import Clock  # type: ignore[no-redef]
    from watchdog_defaults import ALIVE_EVERY_SECONDS, DEFAULTS, SETTINGS_PATH, log, stamp  # type: ignore[no-redef]
    from watchdog_end import EndMixin  # type: ignore[no-redef]
    from watchdog_idle import IdleMixin  # type: ignore[no-redef]
    from watchdog_log import configure_logging  # type: ignore[no-redef]
    from watchdog_spot import SpotMixin  # type: ignore[no-redef]
    from watchdog_sync import SyncMixin  # type: ignore[no-redef]

__all__ = ["Clock", "Watchdog", "configure_logging", "load_settings", "main", "stamp"]

# The parts, one mixin each, every method still reached as ``Watchdog.<name>``: the spot notices and recovery
# (``watchdog_spot``), the syncs (``watchdog_sync``), the idle measurement (``watchdog_idle``), the end
# (``watchdog_end``); the shared defaults and bounds (``watchdog_defaults``), /proc (``watchdog_procs``), the log
# (``watchdog_log``).


class Watchdog(SpotMixin, SyncMixin, IdleMixin, EndMixin):
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
