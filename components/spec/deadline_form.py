"""The form of an ``expiresAt``: one pattern for the loader and the JSON Schema, and the loader's parse of the text."""

from __future__ import annotations

import re
from datetime import datetime

DEADLINE_YEARS = (2000, 2999)
"""expiresAt years accepted: far outside them the date arithmetic of a deadline overflows (year 9999 + offset)."""
assert DEADLINE_YEARS[0] % 1000 == 0 and DEADLINE_YEARS[1] == DEADLINE_YEARS[0] + 999  # the pattern's year below
_TIME = r"-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})(?![\s\S])"
DEADLINE_PATTERN = rf"^{DEADLINE_YEARS[0] // 1000}[0-9]{{3}}{_TIME}"
"""The JSON Schema of an expiresAt: an RFC 3339 date-time (section 5.6: T, seconds, Z or a +hh:mm offset) in the
years above, with ``"format": "date-time"`` for the calendar (no February 30, hour 24 or +24:00 offset), as the
loader's parse (``parse_deadline``) refuses them. A leap second (23:59:60, which RFC 3339 allows) is refused by both:
Python's datetime has no second 60 (and a deadline one second earlier is the same deadline), and the format checker
(``rfc3339-validator``) refuses it too."""
_FORM = re.compile(rf"^[0-9]{{4}}{_TIME}")
"""The loader's form: any year (the year is checked after, with its own message)."""
_NAIVE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?\Z")
_ACCEPTED = "accepted: RFC 3339 with Z or an offset, e.g. 2026-11-30T10:00:00Z"


def parse_deadline(value: str) -> datetime:
    """An expiresAt text as a datetime, or ValueError saying what is wrong with it (strict validation reads no text)."""
    if _NAIVE.match(value):
        raise ValueError(f"has no UTC offset; {_ACCEPTED}")
    if not _FORM.match(value):
        raise ValueError(f"{value!r} is not an RFC 3339 date-time (date, T, hh:mm:ss, Z or +hh:mm); {_ACCEPTED}")
    try:
        return datetime.fromisoformat(value.upper())
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a calendar time ({exc}); {_ACCEPTED}") from None
