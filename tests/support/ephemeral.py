"""Stand-ins for the two interfaces the ephemeral orchestration drives: a recording ``StackBackend`` and a
scripted ``InstanceChannel``. They live only under tests/."""

from __future__ import annotations

import copy
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from gpulease.ephemeral.backend import (
    LineSink,
    OperationResult,
    ResourceEvent,
    ResourceSink,
    StackExistsError,
    StackInfo,
    StackMissingError,
)
from gpulease.ephemeral.config import EXPERIMENT
from tests.support.specs import experiment

Hook = Callable[[], None] | None

OUTPUTS = {
    "instanceId": "i-0123456789abcdef0",
    "instanceType": "g5.xlarge",
    "checkpointUri": "s3://gpulease-bucket/ckpt/",
    "deadline": "2099-01-01T00:00:00Z",
    "sshCommand": "ssh ubuntu@198.51.100.7",
}


def send_self(signum: int) -> Callable[[], None]:
    """A hook that delivers a real signal to this process, as a runner's cancel or Ctrl-C would."""
    return lambda: os.kill(os.getpid(), signum)


SIGINT = signal.SIGINT
SIGTERM = signal.SIGTERM


@dataclass
class RecordingBackend:
    """Records every call; ``fail`` maps an operation name to the exception it raises (or a hook to run)."""

    stacks: dict[str, StackInfo] = field(default_factory=dict)
    outputs_by_stack: dict[str, dict[str, Any]] = field(default_factory=dict)
    fail: dict[str, BaseException] = field(default_factory=dict)
    hooks: dict[str, Callable[[], None]] = field(default_factory=dict)
    destroy_failures: int = 0
    destroy_deletes_first: list[tuple[str, str]] = field(default_factory=list)
    """The (type token, name) resources a failing destroy deletes before it fails (a destroy that fails part-way)."""
    version: str = "3.200.0"
    calls: list[tuple[str, str]] = field(default_factory=list)
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    up_failures: list[tuple[list[tuple[str, str]], BaseException]] = field(default_factory=list)
    """Failures of successive ups: the (type token, name) resources each created first, and the error it raised."""
    config_files: list[str | None] = field(default_factory=list)
    refreshes: list[bool] = field(default_factory=list)
    program_sources: list[str] = field(default_factory=list)
    kept_buckets: list[tuple[str, ...]] = field(default_factory=list)
    """The buckets each destroy was asked to keep (none: everything destroyed)."""
    """The stack file each up's program names, as components/program.py derives it: GPULEASE_STACK_FILE when the
    caller passed it to the program's environment, else the Pulumi CLI's stacks/Pulumi.<stack>.yaml."""

    def _enter(self, op: str, stack: str) -> None:
        self.calls.append((op, stack))
        hook = self.hooks.get(op)
        if hook is not None:
            hook()
        if op in self.fail:
            raise self.fail[op]

    def ops(self) -> list[str]:
        return [op for op, _ in self.calls]

    def cli_version(self) -> str:
        self._enter("cli_version", "")
        return self.version

    def list_stacks(self) -> list[StackInfo]:
        self._enter("list_stacks", "")
        return list(self.stacks.values())

    def create(self, stack: str, config: Mapping[str, Any]) -> None:
        if stack in self.stacks:
            self.calls.append(("create", stack))
            raise StackExistsError(f"stack {stack!r} exists already")
        self._enter("create", stack)
        self.configs[stack] = copy.deepcopy(dict(config))
        self.stacks[stack] = StackInfo(stack)

    def up(self, stack: str, on_output: LineSink, on_resource: ResourceSink, *,
           config_file: str | None = None, refresh: bool = False, stack_file: str | None = None) -> OperationResult:
        self._enter("up", stack)
        self.config_files.append(config_file)
        self.program_sources.append(stack_file or f"stacks/Pulumi.{stack}.yaml")
        self.refreshes.append(refresh)
        if self.up_failures:
            # A failed update: the resources it created before the failure are announced, then the error.
            created, error = self.up_failures.pop(0)
            for token, name in created:
                urn = f"urn:pulumi:{stack}::gpulease::{token}::{name}"
                on_resource(ResourceEvent("create", token, urn, done=False))
                on_resource(ResourceEvent("create", token, urn, done=True))
            raise error
        on_output("Updating (ci stack):")
        for name in ("sg", "bucket", "volume", "instance"):
            urn = f"urn:pulumi:{stack}::gpulease::aws:x/x:X::{name}"
            on_resource(ResourceEvent("create", "aws:x/x:X", urn, done=False))
            on_resource(ResourceEvent("create", "aws:x/x:X", urn, done=True))
        self.outputs_by_stack.setdefault(stack, dict(OUTPUTS))
        return OperationResult({"create": 4})

    def outputs(self, stack: str) -> dict[str, Any]:
        self._enter("outputs", stack)
        if stack not in self.stacks:
            raise StackMissingError(stack)
        return dict(self.outputs_by_stack.get(stack, {}))

    def destroy(self, stack: str, on_output: LineSink, on_resource: ResourceSink, *,
                keep_buckets: tuple[str, ...] = ()) -> OperationResult:
        self._enter("destroy", stack)
        self.kept_buckets.append(keep_buckets)
        if stack not in self.stacks:
            raise StackMissingError(stack)
        if self.destroy_failures > 0:
            self.destroy_failures -= 1
            for token, name in self.destroy_deletes_first:
                urn = f"urn:pulumi:{stack}::gpulease::{token}::{name}"
                on_resource(ResourceEvent("delete", token, urn, done=False))
                on_resource(ResourceEvent("delete", token, urn, done=True))
            raise RuntimeError("DependencyViolation: resource sg-1 has a dependent object")
        on_output("Destroying (ci stack):")
        return OperationResult({"delete": 4})

    def ensure(self, stack: str) -> None:
        self._enter("ensure", stack)
        self.stacks.setdefault(stack, StackInfo(stack))

    def remove(self, stack: str) -> None:
        self._enter("remove", stack)
        if stack not in self.stacks:
            raise StackMissingError(stack)
        del self.stacks[stack]


@dataclass
class ScriptedChannel:
    """Plays the instance: ready at once, prints log lines, exits with ``exit_code``, leaves ``artifacts``."""

    exit_code: int = 0
    log: tuple[str, ...] = ("step 1 loss 2.31", "step 2 loss 1.97")
    artifacts: dict[str, str] = field(default_factory=lambda: {"metrics.json": '{"loss": 1.97}'})
    fail: dict[str, BaseException] = field(default_factory=dict)
    hooks: dict[str, Callable[[], None]] = field(default_factory=dict)
    calls: list[tuple[str, Any]] = field(default_factory=list)
    failed_artifacts: list[str] = field(default_factory=list)
    refused_artifacts: list[str] = field(default_factory=list)
    """Artifacts the collection refuses to write (a hostile name, a local file already there): never written."""
    """Artifacts whose fetch fails (named in the collection's ``failed``, never written)."""

    def _enter(self, op: str, detail: Any) -> None:
        self.calls.append((op, detail))
        hook = self.hooks.get(op)
        if hook is not None:
            hook()
        if op in self.fail:
            raise self.fail[op]

    def wait_ready(self, outputs: Mapping[str, Any], timeout_s: float, on_line: LineSink) -> dict[str, Any]:
        self._enter("wait_ready", timeout_s)
        on_line(f"instance {outputs['instanceId']} ready")
        return {"instanceId": outputs["instanceId"]}

    def wait_verify(self, outputs: Mapping[str, Any], timeout_s: float, on_line: LineSink) -> dict[str, Any]:
        self._enter("wait_verify", timeout_s)
        on_line("verification PASSED")
        return {"instanceId": outputs["instanceId"], "passed": True}

    def run(self, outputs: Mapping[str, Any], job_id: str, command: str, deadline: datetime, on_line: LineSink) -> int:
        self._enter("run", {"job": job_id, "command": command, "deadline": deadline})
        for line in self.log:
            on_line(line)
        return self.exit_code

    def download_artifacts(self, outputs: Mapping[str, Any], job_id: str, dest: Path, bounds: Any = None) -> list[Path]:
        self._enter("download_artifacts", str(dest))
        written = []
        for name, body in self.artifacts.items():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(body)
            written.append(target)
        if self.failed_artifacts or self.refused_artifacts:
            from gpulease.ephemeral.channel import Collected
            failed = [f"'{name}' (not collected: ClientError: 503)" for name in self.failed_artifacts]
            refused = [f"'{name}' (a local file is already there)" for name in self.refused_artifacts]
            return Collected(written, refused + failed, failed)
        return written


def _blocking_channel(started: Path) -> ScriptedChannel:
    """A channel whose training step signals that it started and then runs until the process is signalled."""

    def block() -> None:
        started.write_text("training")
        for _ in range(600):
            time.sleep(0.05)

    return ScriptedChannel(hooks={"run": block})


def drive_cli(argv: list[str], record: Path, started: Path) -> int:
    """Run ``gpulease`` with the stand-ins in this process and write the backend's calls to ``record``."""
    from gpulease import cli
    from gpulease.cli import ephemeral

    backend = RecordingBackend()
    channel = _blocking_channel(started)
    ephemeral.BACKEND_FACTORY = lambda args: backend
    ephemeral.CHANNEL_FACTORY = lambda cfg: channel
    ephemeral.CREDENTIALS_CHECK = lambda cloud, stack: "test"
    ephemeral.COST_ESTIMATOR = lambda cfg: None
    try:
        return cli.main(argv)
    finally:
        record.write_text(json.dumps({"backend": backend.calls, "channel": [op for op, _ in channel.calls]}))


if __name__ == "__main__":
    sys.exit(drive_cli(sys.argv[3:], Path(sys.argv[1]), Path(sys.argv[2])))


def make_project(tmp_path: Path, spec: dict[str, Any] | None = None, extra: dict[str, Any] | None = None) -> Path:
    (tmp_path / "stacks").mkdir(parents=True)
    (tmp_path / "Pulumi.yaml").write_text("name: gpulease\nruntime: python\nstackConfigDir: stacks\n")

    config = {"aws:region": "us-east-1", EXPERIMENT: spec or experiment(), **(extra or {})}
    (tmp_path / "stacks" / "Pulumi.base.yaml").write_text(yaml.safe_dump({"config": config}))
    return tmp_path
