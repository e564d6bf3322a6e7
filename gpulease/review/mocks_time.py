"""The mocks' answer for ``pulumiverse_time``'s ``Static``: the moment the review renders at (or the one given)."""

from __future__ import annotations

from datetime import UTC, datetime

from gpulease.core import resources as rt
from gpulease.review.mock_registry import MockState, register_answers


def _static_time(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    value = i.get("rfc3339") or (m.now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value, {
        "rfc3339": value,
        "unix": int(parsed.timestamp()),
        "year": parsed.year,
        "month": parsed.month,
        "day": parsed.day,
        "hour": parsed.hour,
        "minute": parsed.minute,
        "second": parsed.second,
    }


register_answers(resources={rt.TIME_STATIC: _static_time})
