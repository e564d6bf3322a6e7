"""How much ``ephemeral run`` collects: a count, a total size and a deadline (the GPU bills while it collects).

Beyond any of them the rest is named as not collected (still in the bucket, which is then kept). The deadline
also holds inside a download already running (``bounded_fetch``): with the pull's mechanism (``S3Store.bound_by``)
every answer the client is reading is shut down when the remaining time is up, so a server that trickles cannot
keep the GPU billing past ``--collect-minutes``."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpulease.core.flag_numbers import number

DEFAULT_MAX_OBJECTS = 10_000
DEFAULT_MAX_GIB = 50.0
DEFAULT_COLLECT_MINUTES = 60.0
GIB = 1024**3


@dataclass
class ArtifactBounds:
    max_objects: int = DEFAULT_MAX_OBJECTS
    max_bytes: int = int(DEFAULT_MAX_GIB * GIB)
    seconds: float = DEFAULT_COLLECT_MINUTES * 60
    clock: Callable[[], float] = time.monotonic
    started: float | None = field(default=None)

    def start(self) -> None:
        self.started = self.clock()

    def past(self) -> str | None:
        """Why no further object is fetched (None: go on): the collect step's deadline passed."""
        if self.started is not None and self.clock() - self.started >= self.seconds:
            return f"not collected: past the collect deadline (--collect-minutes {self.seconds / 60:g})"
        return None

    def left(self) -> float:
        return self.seconds - (self.clock() - self.started) if self.started is not None else self.seconds

    def bounded_fetch(self, client: Any, fetch: Callable[[str, str], None]) -> Callable[[str, str], None]:
        """``fetch`` cut off when the collect deadline passes, even mid-body: a ``CollectCutError`` (an ``OSError``,
        so the object is named as not collected and the bucket kept), the part received left behind."""
        from gpulease.transfer.bounded import PullBounds
        from gpulease.transfer.s3 import S3Store

        def bounded(name: str, path: str) -> None:
            limits = PullBounds(max(self.left(), 0.0))
            session = client._endpoint.http_session
            send = session.send
            S3Store(client, "").bound_by(limits)
            try:
                with limits.armed():
                    fetch(name, path)
            except Exception:
                if limits.past():
                    raise CollectCutError(f"past the collect deadline (--collect-minutes {self.seconds / 60:g}) "
                                          "while downloading it; the part received is not kept") from None
                raise
            finally:
                session.send = send

        return bounded

    def split(self, listed: list[tuple[str, int]]) -> tuple[list[str], list[str]]:
        """``listed`` (name, size) into those within the count and the total size, and the rest (with why)."""
        within: list[str] = []
        beyond: list[str] = []
        total = 0
        for name, size in listed:
            if len(within) >= self.max_objects:
                beyond.append(f"'{name}' (not collected: beyond --max-artifacts {self.max_objects})")
            elif total + size > self.max_bytes:
                beyond.append(f"'{name}' (not collected: {size} bytes would pass --max-artifacts-gib "
                              f"{self.max_bytes / GIB:g})")
            else:
                within.append(name)
                total += size
        return within, beyond


class CollectCutError(OSError):
    """A download cut off at the collect deadline (``--collect-minutes``)."""


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-artifacts", type=number("a number of artifacts", 1, 10_000_000, whole=True, example="10000"),
                   default=DEFAULT_MAX_OBJECTS,
                   help=f"collect at most this many artifacts (default {DEFAULT_MAX_OBJECTS:,})")
    p.add_argument("--max-artifacts-gib", type=number("a number of GiB", 0, 100_000, above=True, example="50"),
                   default=DEFAULT_MAX_GIB,
                   help=f"collect at most this many GiB of artifacts in all (default {DEFAULT_MAX_GIB:g})")
    p.add_argument("--collect-minutes", type=number("a number of minutes", 0, 1440, above=True, example="60"),
                   default=DEFAULT_COLLECT_MINUTES,
                   help=f"collect artifacts for at most this long, a running download included (default "
                        f"{DEFAULT_COLLECT_MINUTES:g})")


def from_args(args: argparse.Namespace) -> ArtifactBounds:
    return ArtifactBounds(int(args.max_artifacts), int(args.max_artifacts_gib * GIB), args.collect_minutes * 60)
