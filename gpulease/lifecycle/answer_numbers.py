"""The numbers ``gpulease init`` is given (``--budget``, ``--hours``), as flags and as answers typed on a terminal:
ASCII digits only, through the one parser of every numeric flag (``gpulease.core.flag_numbers``), so ``８0``, ``٣``
and ``0x10`` are refused with the accepted format, never read. Kept apart from the answers' other checks so that
the command's parser is built without the catalog."""

from __future__ import annotations

from gpulease.core import vocabulary as v
from gpulease.core.flag_numbers import number

BUDGET = number("an amount of USD", 0, 1_000_000, example="60", above=True)
MAX_HOURS = v.MAX_RUNTIME_HOURS_CAP
"""The longest deadline the stack file accepts (the spec's ``max_runtime_hours`` bound), the one bound of ``--hours``."""
HOURS = number("a number of hours", 0, MAX_HOURS, example="8", above=True)
