"""The date of a price an override gave without one, and how a price date reads: standard library only, so that
the pack can name an undated price without importing the catalog's models."""

from __future__ import annotations

from datetime import date

UNDATED = date.min
"""The date of a price an override gave without any date (no ``asOf``, nothing in its dates map): its age is
unknown. The earliest date, so that every age check counts it as older than any bound (fail closed); shown as
``undated`` wherever a date is printed, written as ``0001-01-01`` in a dates map."""
UNDATED_TEXT = "undated"


def date_label(value: date | str | None) -> str:
    """A price date as a person reads it: the ISO date, or ``undated`` for ``UNDATED``."""
    if value is None:
        return "n/a"
    text = value.isoformat() if isinstance(value, date) else str(value)
    return UNDATED_TEXT if text == UNDATED.isoformat() else text
