"""The watchdog's syncs: the periodic one beside the loop, the rebalance checkpoint, the final one, the last logs."""

from __future__ import annotations

import os
import threading
import time

try:
    from instance import bounds
    from instance import cloud_access as ca
    from instance.watchdog_defaults import SHUTDOWN_RESERVE_SECONDS
except ImportError:  # on the instance: the other tools are installed next to this file
    import bounds  # type: ignore[no-redef]
    import cloud_access as ca  # type: ignore[no-redef]
    from watchdog_defaults import SHUTDOWN_RESERVE_SECONDS  # type: ignore[no-redef]


class SyncMixin:
    """The watchdog's syncs: the periodic one beside the loop, the rebalance checkpoint, the final one, the last logs."""

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
