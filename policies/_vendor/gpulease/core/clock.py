"""The one source of "now" for the program, so tests and offline reviews can fix the moment."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


@contextmanager
def frozen(now: datetime | None) -> Iterator[None]:
    """Within the block, ``utcnow()`` returns ``now`` (no change when ``now`` is None)."""
    global utcnow
    if now is None:
        yield
        return
    original = utcnow

    def fixed() -> datetime:
        return now

    utcnow = fixed
    try:
        yield
    finally:
        utcnow = original
