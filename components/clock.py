"""The one source of "now" for the program, so tests and offline reviews can fix the moment."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)
