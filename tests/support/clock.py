"""The one test clock: the moment every offline rendering, policy verdict and price age in the tests is judged at.

Tests that talk to moto's server or the Alibaba Cloud stub judge against the real time instead (``live_now``):
those servers stamp what they create with the real time, so a fixed moment would put a fresh resource in the
past or the future."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

FIXED_NOW = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
"""A Tuesday morning; the deadline of an 8-hour experiment started then is 2026-12-01T16:00:00Z."""
REFRESH_EVE = FIXED_NOW - timedelta(hours=22, minutes=30)
"""When the catalog-refresh tests run their price lookups: the morning before ``FIXED_NOW``."""
REVIEW_MOMENT = FIXED_NOW - timedelta(hours=22)
"""When the golden review of the example stacks was taken (tests/review/test_golden.py)."""


def live_now() -> datetime:
    """The real time, whole seconds (what moto and the Alibaba Cloud stub stamp resources with)."""
    return datetime.now(UTC).replace(microsecond=0)
