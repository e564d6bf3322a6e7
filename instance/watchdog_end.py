"""The watchdog's end: hooks and commands, the checkpoint signal, the final sequence, release, shutdown, SIGTERM."""

from __future__ import annotations

import os
import signal
import time

try:
    from instance import bounds
    from instance import cloud_access as ca
    from instance.watchdog_defaults import IDLE_SYNC_WINDOW_SECONDS, SHUTDOWN_RESERVE_SECONDS
    from instance.watchdog_procs import _alive, _argv, _launcher, _processes
except ImportError:  # on the instance: the other tools are installed next to this file
    import bounds  # type: ignore[no-redef]
    import cloud_access as ca  # type: ignore[no-redef]
    from watchdog_defaults import IDLE_SYNC_WINDOW_SECONDS, SHUTDOWN_RESERVE_SECONDS  # type: ignore[no-redef]
    from watchdog_procs import _alive, _argv, _launcher, _processes  # type: ignore[no-redef]


class EndMixin:
    """The watchdog's end: hooks and commands, the checkpoint signal, the final sequence, release, shutdown, SIGTERM."""

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
