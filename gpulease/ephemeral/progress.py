"""Progress as it happens: a live display in a terminal (rich), timestamped plain lines in CI or a pipe.

With ``--json`` the progress goes to stderr and stdout carries only the final summary document."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gpulease.core.money import usd, usd_per_hour
from gpulease.core.printable import escaped, printable
from gpulease.ephemeral.backend import ResourceEvent


@dataclass
class StepRecord:
    name: str
    status: str = "running"
    seconds: float = 0.0
    detail: str = ""


@dataclass
class Progress:
    """Collects step timings and resource counts while reporting them; subclasses decide how they look."""

    steps: list[StepRecord] = field(default_factory=list)
    resources_done: int = 0

    @contextmanager
    def step(self, name: str) -> Iterator[StepRecord]:
        record = StepRecord(name)
        self.steps.append(record)
        started = time.monotonic()
        self._step_started(record)
        try:
            yield record
        except BaseException as exc:
            record.status = "interrupted" if not isinstance(exc, Exception) else "failed"
            record.detail = record.detail or _short(exc)
            raise
        else:
            if record.status == "running":
                record.status = "ok"
        finally:
            record.seconds = round(time.monotonic() - started, 1)
            self._step_finished(record)

    def line(self, source: str, text: str) -> None:
        # What the instance wrote (job log lines, verify details, a marker's instance id) never reaches the terminal
        # raw: an ESC sequence or U+202E is written out as an escape, as ``gpulease logs`` does; tabs are kept.
        text = escaped(text, keep="\t")
        self._emit(f"{escaped(source)}: {text}" if source else text)

    def note(self, text: str) -> None:
        self._emit(escaped(text, keep="\t"))

    def resource(self, event: ResourceEvent) -> None:
        # Counted, not printed: the engine's own output lines (``line``) already name each step.
        if event.done:
            self.resources_done += 1

    def close(self) -> None:
        """Stop any live display."""

    # -- how it looks -----------------------------------------------------------------------------------------
    def _emit(self, text: str) -> None:
        raise NotImplementedError

    def _step_started(self, record: StepRecord) -> None:
        self._emit(f"==> {record.name}")

    def _step_finished(self, record: StepRecord) -> None:
        tail = f": {escaped(record.detail, keep=chr(9))}" if record.detail else ""
        self._emit(f"<== {record.name} {record.status} in {record.seconds:g}s{tail}")


class PlainProgress(Progress):
    """One timestamped line per event: what CI logs and pipes want."""

    def __init__(self, stream: TextIO):
        super().__init__()
        self.stream = stream

    def _emit(self, text: str) -> None:
        stamp = datetime.now(UTC).strftime("%H:%M:%S")
        self.stream.write(f"{stamp} {text}\n")
        self.stream.flush()


class RichProgress(Progress):
    """A spinner with the current step and live counts; every line is kept above it."""

    def __init__(self, console: Console):
        super().__init__()
        self.console = console
        self._status: Any = None

    def _emit(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False)

    def _step_started(self, record: StepRecord) -> None:
        self.console.print(f"[bold]▶ {record.name}[/bold]")
        if self._status is None:
            self._status = self.console.status(record.name)
            self._status.start()
        self._status.update(record.name)

    def resource(self, event: ResourceEvent) -> None:
        super().resource(event)
        if self._status is not None and self.steps:
            self._status.update(f"{self.steps[-1].name} · {self.resources_done} resource steps done")

    def _step_finished(self, record: StepRecord) -> None:
        colour = {"ok": "green", "failed": "red", "interrupted": "yellow"}.get(record.status, "white")
        tail = f": {escape(escaped(record.detail, keep=chr(9)))}" if record.detail else ""
        self.console.print(f"[{colour}]■ {record.name} {record.status}[/{colour}] in {record.seconds:g}s{tail}", markup=True)

    def close(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


def make_progress(json_mode: bool, stream: TextIO | None = None) -> Progress:
    """Rich when stdout is a terminal outside CI; plain lines otherwise. JSON mode reports on stderr."""
    out = stream or (sys.stderr if json_mode else sys.stdout)
    interactive = out.isatty() and not os.environ.get("CI") and os.environ.get("TERM") != "dumb"
    if interactive:
        return RichProgress(Console(file=out))
    return PlainProgress(out)


def print_summary(summary: dict[str, Any], console: Console) -> None:
    table = Table(title=f"gpulease ephemeral: {_shown(summary.get('stack'))}", show_header=False)
    table.add_column("", style="bold")
    table.add_column("")
    rows = [
        ("outcome", summary.get("outcome")),
        ("exit code", summary.get("exitCode")),
        ("base stack", summary.get("baseStack")),
        ("duration", f"{summary.get('durationSeconds', 0):g}s"),
        ("resources", summary.get("resources", {}).get("count")),
        ("instance", summary.get("instanceType")),
        ("estimated cost", _cost(summary.get("estimatedCostUsd"), summary.get("hourlyUsd"), summary.get("worstCaseUsd"))),
        ("artifacts", f"{len(summary.get('artifacts', []))} files in {summary.get('artifactsDir')}"
                      + (f"; {len(summary['refusedArtifacts'])} refused" if summary.get("refusedArtifacts") else "")),
        ("torn down", _teardown(summary.get("teardown", {}), str(summary.get("stack")), summary.get("checkpointBucket"))),
    ]
    if summary.get("failedArtifacts"):
        failed = summary["failedArtifacts"]
        rows.append(("not collected", f"{len(failed)}: {', '.join(failed[:5])}{' ...' if len(failed) > 5 else ''}"))
    if summary.get("error"):
        rows.append(("error", summary["error"]))
    for key, value in rows:
        if value is not None:
            table.add_row(key, _shown(value))  # instance-written text (ready.json's "failed") among them
    steps = " · ".join(f"{s['name']} {s['status']} {s['seconds']:g}s" for s in summary.get("steps", []))
    if steps:
        table.add_row("steps", _shown(steps))
    console.print(table)


def _cost(value: Any, hourly: Any, worst: Any) -> str | None:
    if value is None:
        return None
    bound = f"at most {usd(worst)}" if worst is not None else "an unknown worst case (an item has no price)"
    return f"{usd(value)} ({usd_per_hour(hourly)} while it existed; {bound} had it run to its deadline)"


def _shown(value: Any) -> str:
    return escape(printable(str(value)))


STORAGE_PRICES = {
    "aws": "S3 Standard: $0.023 per GB-month in us-east-1, https://aws.amazon.com/s3/pricing/",
    "alicloud": "OSS Standard (LRS): https://www.alibabacloud.com/product/oss/pricing",
}


def kept_terms(stack: str, terms: dict[str, Any]) -> str:
    """What a kept bucket means: where the artifacts are, how long they stay, what it costs, how it goes."""
    days = terms.get("expireDays")
    expiry = (f"; its lifecycle rule expires the objects under the checkpoint prefix, the job's artifacts at "
              f"<prefix>_gpulease/jobs/{stack}/artifacts/ included, {days} days after they were written" if days else "")
    collect = (f"(and the stack holding it): artifacts there were not collected "
               f"(`gpulease ephemeral collect {stack} --artifacts-dir DIR`){expiry}")
    if terms.get("existing"):
        return (f"{collect}; it is your own bucket: `gpulease ephemeral down {stack}` removes the stack, never "
                "the bucket or what it holds")
    price = STORAGE_PRICES.get(str(terms.get("cloud")), "the storage's own price")
    return (f"{collect}; it bills for what it stores ({price}) until `gpulease ephemeral down {stack} "
            "--with-buckets` deletes it")


def _teardown(teardown: dict[str, Any], stack: str, terms: dict[str, Any] | None = None) -> str:
    if not teardown:
        return "-"
    if teardown.get("keptBuckets"):
        return f"destroyed but bucket {', '.join(teardown['keptBuckets'])} {kept_terms(stack, terms or {})}"
    if teardown.get("removed"):
        return "destroyed and removed"
    if teardown.get("destroyed"):
        return "destroyed, stack not removed"
    return f"NO: {teardown.get('error', 'not attempted')} (gpulease ephemeral gc will retry)"


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]
