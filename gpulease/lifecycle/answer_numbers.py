"""The numbers ``gpulease init`` is given (``--budget``, ``--hours``), as flags and as answers typed on a terminal:
ASCII digits only, through the one parser of every numeric flag (``gpulease.core.flag_numbers``), so ``８0``, ``٣``
and ``0x10`` are refused with the accepted format, never read. Kept apart from the answers' other checks so that
the command's parser is built without the catalog."""

from __future__ import annotations

from gpulease.core.flag_numbers import number

BUDGET = number("an amount of USD", 0, 1_000_000, example="60", above=True)
HOURS = number("a number of hours", 0, 720, example="8", above=True)
