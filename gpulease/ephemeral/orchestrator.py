"""run / up / down / ls / gc for ephemeral stacks, over a ``StackBackend`` and an ``InstanceChannel``.

The guarantee of ``run``: once the stack exists, it is destroyed and removed however the run ends: success, a
failed step, an exception, SIGINT or SIGTERM; but once the job was started and its artifacts were not all collected,
its checkpoint bucket is kept with the stack (``ephemeral collect``, then ``ephemeral down --with-buckets``).
Signals raise ``Interrupted`` in the main thread; from the start of
teardown on, further signals are noted and ignored so that a second Ctrl-C cannot leave a GPU running. A stack
whose destroy fails is NOT removed (removing it would orphan live resources): it keeps its deadline and
``ephemeral gc`` retries it. What catches a runner that died outright (SIGKILL, lost machine) is, in order, the
workflow's ``if: always()`` clean-up step, the scheduled ``ephemeral gc``, and the stack's own deadline (the
scheduler / auto-release timer and the watchdog on the instance).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gpulease.core import vocabulary as v
from gpulease.ephemeral.artifact_bounds import ArtifactBounds
from gpulease.ephemeral.backend import StackBackend, StackExistsError, StackMissingError
from gpulease.ephemeral.channel import ChannelError, InstanceChannel, parse_bucket_uri
from gpulease.ephemeral.config import EphemeralConfig
from gpulease.ephemeral.progress import Progress
from gpulease.ephemeral.signals import Interrupted, SignalGuard, guard_signals
from gpulease.ephemeral.teardown import DESTROY_ATTEMPTS, Teardown, teardown

__all__ = ["DESTROY_ATTEMPTS", "Teardown", "teardown"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_TEARDOWN_FAILED = 3
"""Teardown did not finish: the stack is kept for ``ephemeral gc``; this wins over every other exit code."""
EXIT_INCOMPLETE = 3
"""Artifacts not all collected (named in the summary; the bucket that holds them is kept)."""

UNFINISHED_JOB = "(the job did not finish: what it left is in the bucket only, its artifacts not all written)"
"""Named among the artifacts not collected when the collection ran after a job that never ended."""

VERIFY_SLACK_MINUTES = 10
"""Waited for a verification beyond its maxMinutes: tmux and the result's copy to the bucket."""


def stack_deadline(outputs: Mapping[str, Any]) -> datetime | None:
    """The stack's recorded deadline: the ``deadline`` output, or the latest of a sweep's experiments."""
    found: list[datetime] = []
    candidates = [outputs.get("deadline")]
    experiments = outputs.get("experiments")
    if isinstance(experiments, Mapping):
        candidates += [e.get("deadline") for e in experiments.values() if isinstance(e, Mapping)]
    for value in candidates:
        if isinstance(value, str):
            try:
                found.append(v.parse_rfc3339(value))
            except ValueError:
                continue
    return max(found) if found else None


def stack_buckets(outputs: Mapping[str, Any]) -> tuple[str, ...]:
    """The checkpoint buckets a stack's outputs name: its ``checkpointUri``, or each of a sweep's experiments'."""
    uris = [outputs.get("checkpointUri")]
    experiments = outputs.get("experiments")
    if isinstance(experiments, Mapping):
        uris += [e.get("checkpointUri") for e in experiments.values() if isinstance(e, Mapping)]
    names = set()
    for uri in (u for u in uris if isinstance(u, str)):
        try:
            names.add(parse_bucket_uri(uri).bucket)
        except ChannelError:  # no s3:// or oss:// location (``none``: no checkpoints): no bucket of the stack's
            continue
    return tuple(sorted(n for n in names if n))


@dataclass
class RunOptions:
    command: str
    artifacts_dir: Path
    ready_timeout_s: float = 20 * 60
    artifact_bounds: ArtifactBounds = field(default_factory=ArtifactBounds)


@dataclass
class RunState:
    created: bool = False
    outputs: dict[str, Any] = field(default_factory=dict)
    up_changes: dict[str, int] = field(default_factory=dict)
    ready: bool = False
    command_exit: int | None = None
    artifacts: list[Path] = field(default_factory=list)
    refused_artifacts: list[str] = field(default_factory=list)
    failed_artifacts: list[str] = field(default_factory=list)
    """Artifacts not collected (a failed fetch, a bound reached, the collection failed or was interrupted): still in
    the bucket."""
    job_started: bool = False
    """The command was started on the instance: from then on the bucket may hold the job's artifacts."""
    collected_all: bool = False
    """The collection ran to its end with every artifact written (nothing failed, refused or interrupted)."""
    error: str | None = None
    failed_step: str | None = None
    instance_started: float | None = None


class EphemeralRun:
    """One ``ephemeral run``: create, up, wait, train, collect, and always tear down."""

    def __init__(
        self,
        backend: StackBackend,
        channel_factory: Callable[[EphemeralConfig], InstanceChannel],
        progress: Progress,
        *,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        estimator: Callable[[EphemeralConfig], dict[str, float | None] | None] | None = None,
    ):
        self.backend = backend
        self.channel_factory = channel_factory
        self.progress = progress
        self.sleep = sleep
        self.now = now
        self.estimator = estimator

    def execute(self, cfg: EphemeralConfig, options: RunOptions) -> dict[str, Any]:
        started = time.monotonic()
        state = RunState()
        interrupted: Interrupted | None = None
        tear: Teardown | None = None
        # Priced before anything exists, from the rendered program; the summary scales it by the real lifetime.
        rates = self.estimator(cfg) if self.estimator else None
        with guard_signals() as guard:
            try:
                self._body(cfg, options, state, guard)
            except Interrupted as exc:
                interrupted = exc
                state.error = str(exc)
            except StackExistsError as exc:
                state.error = str(exc)
                state.created = False
            except Exception as exc:
                state.error = state.error or f"{type(exc).__name__}: {str(exc).strip()[:1000]}"
            finally:
                guard.disarm()
                if state.created:
                    tear = teardown(self.backend, cfg.stack, self.progress, sleep=self.sleep,
                                    keep_buckets=self._buckets_to_keep(state))
            late = [signal.Signals(s).name for s in guard.received[1 if interrupted else 0 :]]
            if late:
                self.progress.note(f"received {', '.join(late)} during teardown; teardown finished first")
        return self._summary(cfg, options, state, tear, interrupted, time.monotonic() - started, rates)

    def _body(self, cfg: EphemeralConfig, options: RunOptions, state: RunState, guard: SignalGuard) -> None:
        p = self.progress
        with p.step("create stack") as record:
            record.detail = cfg.stack
            state.created = True  # from here on the stack may exist: teardown runs whatever happens next
            with guard.critical():
                self.backend.create(cfg.stack, cfg.config)
        with p.step("up") as record:
            state.failed_step = "up"
            state.instance_started = time.monotonic()
            with guard.critical():
                result = self.backend.up(cfg.stack, lambda line: p.line("pulumi", line), p.resource)
                state.up_changes = dict(result.resource_changes)
                state.outputs = self.backend.outputs(cfg.stack)
            record.detail = f"{sum(state.up_changes.values())} resources"
        channel = self.channel_factory(cfg)
        with p.step("wait for instance"):
            state.failed_step = "wait for instance"
            channel.wait_ready(state.outputs, options.ready_timeout_s, lambda line: p.line("instance", line))
            state.ready = True
        verify = cfg.experiment.verify
        if verify is not None:
            # The instance verifies on its own after readiness; a failure stops the run here (and tears it down).
            with p.step("verify") as record:
                state.failed_step = "verify"
                result = channel.wait_verify(state.outputs, 60 * (verify.max_minutes + VERIFY_SLACK_MINUTES),
                                             lambda line: p.line("verify", line))
                record.detail = f"passed in {(result.get('seconds') or {}).get('total', '?')} s"
        deadline = stack_deadline(state.outputs) or (self.now() + timedelta(hours=cfg.experiment.max_runtime_hours))
        train_error: BaseException | None = None
        try:
            with p.step("train") as record:
                state.failed_step = "train"
                state.job_started = True
                state.command_exit = channel.run(
                    state.outputs, cfg.stack, options.command, deadline, lambda line: p.line("train", line)
                )
                record.detail = f"exit code {state.command_exit}"
                if state.command_exit != 0:
                    record.status = "failed"
        except BaseException as exc:
            train_error = exc
            raise
        finally:
            # Artifacts (logs, partial checkpoints) matter most when the job failed: collect them whenever the
            # job reached the instance. A collection error never hides the training error.
            try:
                with p.step("collect artifacts") as record:
                    if train_error is None:
                        state.failed_step = "collect artifacts"
                    collected = channel.download_artifacts(state.outputs, cfg.stack, options.artifacts_dir,
                                                           bounds=options.artifact_bounds)
                    state.artifacts = list(collected)
                    state.refused_artifacts = list(getattr(collected, "refused", []))
                    state.failed_artifacts = list(getattr(collected, "failed", []))
                    if state.command_exit is None:
                        # The job did not finish (interrupted, its result never came): it has not written all yet.
                        state.failed_artifacts.append(UNFINISHED_JOB)
                    if state.failed_artifacts:
                        record.status = "failed"
                    state.collected_all = not (state.failed_artifacts or state.refused_artifacts)
                    refused = state.refused_artifacts
                    record.detail = f"{len(state.artifacts)} files into {options.artifacts_dir}" + (
                        f"; refused {len(refused)} (never written): {', '.join(refused[:5])}"
                        f"{' ...' if len(refused) > 5 else ''}" if refused else "")
            except Interrupted as exc:
                # Stopped mid-way: what was not written yet is only in the bucket (kept by the teardown).
                state.failed_artifacts = state.failed_artifacts or [f"(the collection was {exc}: not finished)"]
                raise
            except Exception as exc:
                state.failed_artifacts = state.failed_artifacts or [f"(the collection failed: {str(exc).strip()[:300]})"]
                if train_error is None:
                    raise
                p.note(f"artifacts not collected: {exc}")
        state.failed_step = None

    @staticmethod
    def _buckets_to_keep(state: RunState) -> tuple[str, ...]:
        """The checkpoint buckets, whenever the job ran and its artifacts were not all collected (failed, refused,
        or the collection interrupted or never reached): never destroyed with the only copy. A job never started
        (up failed, readiness timed out) left nothing of its own there: all is destroyed."""
        if not state.job_started or state.collected_all:
            return ()
        return stack_buckets(state.outputs)

    def _summary(
        self,
        cfg: EphemeralConfig,
        options: RunOptions,
        state: RunState,
        tear: Teardown | None,
        interrupted: Interrupted | None,
        seconds: float,
        rates: dict[str, float] | None,
    ) -> dict[str, Any]:
        if tear is not None and not (tear.destroyed and (tear.removed or tear.kept_buckets)):
            code, outcome = EXIT_TEARDOWN_FAILED, "teardown-failed"
        elif interrupted is not None:
            code, outcome = 128 + interrupted.signum, "interrupted"
        elif state.command_exit not in (None, 0):
            code, outcome = int(state.command_exit), "command-failed"
        elif state.error is not None:
            code, outcome = EXIT_FAILED, "failed"
        elif state.failed_artifacts or state.refused_artifacts:
            code, outcome = EXIT_INCOMPLETE, "artifacts-incomplete"
        else:
            code, outcome = EXIT_OK, "succeeded"
        hours = 0.0
        if state.instance_started is not None:
            # From the start of up to the end of teardown: resources bill until they are gone.
            hours = max(0.0, time.monotonic() - state.instance_started) / 3600
        instance_type = state.outputs.get("instanceType")
        return {
            "stack": cfg.stack,
            "baseStack": cfg.base_stack,
            "ciRun": cfg.experiment.ci_run,
            "outcome": outcome,
            "exitCode": code,
            "commandExitCode": state.command_exit,
            "error": state.error,
            "failedStep": state.failed_step if state.error else None,
            "durationSeconds": round(seconds, 1),
            "deadline": state.outputs.get("deadline"),
            "maxRuntimeHours": cfg.experiment.max_runtime_hours,
            "instanceType": instance_type,
            "market": cfg.experiment.market,
            "resources": {
                "count": state.up_changes.get("create", 0) + state.up_changes.get("same", 0),
                "changes": state.up_changes,
            },
            "estimatedCostUsd": round(rates["hourlyUsd"] * hours, 4) if rates and rates["hourlyUsd"] is not None else None,
            "hourlyUsd": rates["hourlyUsd"] if rates else None,
            "worstCaseUsd": rates["worstCaseUsd"] if rates else None,
            "artifacts": [str(p) for p in state.artifacts],
            "refusedArtifacts": state.refused_artifacts,
            "failedArtifacts": state.failed_artifacts,
            "artifactsDir": str(options.artifacts_dir),
            "teardown": tear.as_dict() if tear else {},
            "checkpointBucket": bucket_terms(cfg),
            "steps": [{"name": s.name, "status": s.status, "seconds": s.seconds, "detail": s.detail} for s in self.progress.steps],
        }


def bucket_terms(cfg: EphemeralConfig) -> dict[str, Any]:
    """What a kept checkpoint bucket is: its cloud, the days after which its lifecycle rule expires the objects
    under the checkpoint prefix (the job's artifacts included), and whether it is the user's own (never deleted)."""
    checkpoints = cfg.experiment.checkpoints
    existing = checkpoints.bucket is not None  # the program only refers to it: no lifecycle rule of the stack's
    return {"cloud": cfg.spec.cloud, "expireDays": None if existing else checkpoints.lifecycle.keep_days,
            "existing": existing}


# -- the steps by hand ------------------------------------------------------------------------------------------


def bring_up(
    backend: StackBackend,
    channel_factory: Callable[[EphemeralConfig], InstanceChannel] | None,
    progress: Progress,
    cfg: EphemeralConfig,
    *,
    ready_timeout_s: float,
    keep_on_failure: bool = False,
) -> dict[str, Any]:
    """Create and up an ephemeral stack and (with a channel) wait until the instance is ready. A failure tears the
    half-made stack down unless ``keep_on_failure``; success leaves it running until ``down`` or its deadline."""
    state = RunState()
    interrupted: Interrupted | None = None
    tear: Teardown | None = None
    with guard_signals() as guard:
        try:
            with progress.step("create stack") as record:
                record.detail = cfg.stack
                state.created = True
                with guard.critical():
                    backend.create(cfg.stack, cfg.config)
            with progress.step("up"), guard.critical():
                state.up_changes = dict(
                    backend.up(cfg.stack, lambda line: progress.line("pulumi", line), progress.resource).resource_changes
                )
                state.outputs = backend.outputs(cfg.stack)
            if channel_factory is not None:
                with progress.step("wait for instance"):
                    channel_factory(cfg).wait_ready(
                        state.outputs, ready_timeout_s, lambda line: progress.line("instance", line)
                    )
                    state.ready = True
        except Interrupted as exc:
            interrupted, state.error = exc, str(exc)
        except StackExistsError as exc:
            state.created, state.error = False, str(exc)
        except Exception as exc:
            state.error = f"{type(exc).__name__}: {str(exc).strip()[:1000]}"
        finally:
            guard.disarm()
            if state.created and state.error is not None and not keep_on_failure:
                tear = teardown(backend, cfg.stack, progress)
    if tear is not None and not (tear.destroyed and tear.removed):
        code = EXIT_TEARDOWN_FAILED
    elif interrupted is not None:
        code = 128 + interrupted.signum
    else:
        code = EXIT_FAILED if state.error else EXIT_OK
    return {
        "stack": cfg.stack,
        "baseStack": cfg.base_stack,
        "exitCode": code,
        "outcome": "up" if code == EXIT_OK else "failed",
        "error": state.error,
        "ready": state.ready,
        "outputs": state.outputs,
        "resources": {"changes": state.up_changes},
        "teardown": tear.as_dict() if tear else {},
        "steps": [{"name": s.name, "status": s.status, "seconds": s.seconds, "detail": s.detail} for s in progress.steps],
    }


def take_down(
    backend: StackBackend, progress: Progress, stack: str, sleep: Callable[[float], None] = time.sleep, *,
    with_buckets: bool = False,
) -> dict[str, Any]:
    """Destroy and remove one ephemeral stack, shielded from signals once started. Unless ``with_buckets``, the
    checkpoint buckets its outputs name are kept with the stack, as ``ephemeral gc`` keeps them: the job's artifacts
    may be there only (a run cancelled before it collected them)."""
    keep: tuple[str, ...] = ()
    if not with_buckets:
        try:
            keep = stack_buckets(backend.outputs(stack))
        except StackMissingError:
            keep = ()  # nothing left to keep; the teardown finds it gone
    with guard_signals() as guard:
        guard.disarm()  # a clean-up must run to the end; signals are recorded, not obeyed
        tear = teardown(backend, stack, progress, sleep=sleep, keep_buckets=keep)
    ok = tear.destroyed and (tear.removed or bool(tear.kept_buckets))
    return {"stack": stack, "exitCode": EXIT_OK if ok else EXIT_TEARDOWN_FAILED, "teardown": tear.as_dict()}
