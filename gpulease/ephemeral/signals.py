"""SIGINT and SIGTERM during an ephemeral run: the first interrupts it (``Interrupted``), later ones are only noted,
and inside a Pulumi CLI operation the interruption waits for it to return (a SIGTERM is passed on to the CLI as its
graceful cancel)."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived; a BaseException so that no ``except Exception`` swallows it."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum


def forward_to_cli(signum: int) -> None:
    """Send ``signum`` to the Pulumi CLI processes this process started (Linux /proc; a no-op elsewhere)."""
    me = os.getpid()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        comm = text[text.find("(") + 1 : text.rfind(")")]
        fields = text[text.rfind(")") + 2 :].split()
        if len(fields) > 1 and fields[1] == str(me) and comm == "pulumi":
            with contextlib.suppress(OSError):
                os.kill(int(stat.parent.name), signum)


@dataclass
class SignalGuard:
    """While armed, the first SIGINT/SIGTERM interrupts the run; later ones are only recorded.

    Inside ``critical()`` (a Pulumi CLI operation) the interruption waits for the operation to return: raising
    while the Automation API reads the CLI's output would close its pipes and kill it mid-update, leaving a
    locked stack. A SIGTERM is passed on to the CLI as SIGINT, its graceful cancel (in-flight steps finish, state
    is saved, the lock released). A SIGINT is not passed on: from a terminal the whole process group, the CLI
    included, has received it already, and a second one would make the CLI stop at once."""

    received: list[int] = field(default_factory=list)
    armed: bool = True
    pending: int | None = None
    depth: int = 0
    forward: Callable[[int], None] = field(default_factory=lambda: forward_to_cli)

    def handle(self, signum: int, _frame: Any) -> None:
        self.received.append(signum)
        if not self.armed:
            return
        if self.depth:
            if self.pending is None:
                self.pending = signum
                if signum == signal.SIGTERM:
                    self.forward(signal.SIGINT)
            return
        self.armed = False  # one-shot: a second signal must never interrupt the teardown
        raise Interrupted(signum)

    @contextmanager
    def critical(self) -> Iterator[None]:
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            if self.pending is not None and self.armed and not self.depth:
                signum, self.pending = self.pending, None
                self.armed = False
                raise Interrupted(signum)

    def disarm(self) -> None:
        self.armed = False


@contextmanager
def guard_signals() -> Iterator[SignalGuard]:
    guard = SignalGuard()
    if threading.current_thread() is not threading.main_thread():
        # Signal handlers can only be installed from the main thread; callers there still get teardown on errors.
        yield guard
        return
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    for s in SIGNALS:
        signal.signal(s, guard.handle)
    try:
        yield guard
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
