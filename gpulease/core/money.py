"""How a price is written for a person, in every command and policy message.

- ``usd(x)``: a total, ``$1,234.57``;
- ``usd_per_hour(x)``: a rate, ``$0.322/h`` (3 decimals);
- ``usd_per_month(x)``: ``$12.30/month``;
- ``usd_per_gb(x)``: ``$0.117/GB`` (a price per GB, with the digits of a rate).

All three use a thousands separator and round half up on the decimal digits the value was written with
(``usd(1.005)`` is ``$1.01``, not the binary float's ``$1.00``). A positive value never reads as zero: below
$0.01 it is shown with two significant digits (``$0.0042/h``). A negative value (a credit) keeps its sign in
front (``-$1.50``). NaN and infinity are refused with ``ValueError``: a price that is not a number is a bug to
surface, not a string to print. ``None`` is the caller's unknown word (``unknown`` unless told otherwise).
Tables put the ``$`` in their cells too; JSON output keeps plain numbers. ``shown_value(x)`` is the figure ``usd``
shows, as a ``Decimal`` (``usd`` writes it), for a sum of shown figures.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

SMALL = Decimal("0.01")


def shown_value(x: float | Decimal, places: int = 2) -> Decimal:
    """The value as a price of ``places`` decimals shows it (``usd`` is ``places=2``): half up on the digits the value
    was written with; a positive value below $0.01 to two significant digits (never zero), the sign kept. NaN,
    infinity and what is not a number are refused with ``ValueError``."""
    if isinstance(x, bool) or not isinstance(x, (int, float, Decimal)):
        raise ValueError(f"a price must be a number, not {x!r}")
    if (isinstance(x, float) and not math.isfinite(x)) or (isinstance(x, Decimal) and not x.is_finite()):
        raise ValueError(f"a price must be a finite number, not {x!r}")
    value = Decimal(repr(x)) if isinstance(x, float) else Decimal(x)
    negative, value = value < 0, abs(value)
    rounded = value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    if 0 < value < SMALL:
        rounded = value.quantize(Decimal(1).scaleb(value.adjusted() - 1), rounding=ROUND_HALF_UP)  # 2 significant
        if rounded >= SMALL:
            rounded = SMALL.quantize(Decimal(1).scaleb(-places))
    return -rounded if negative else rounded


def _amount(x: float | Decimal, places: int) -> str:
    rounded = shown_value(x, places)
    sign, rounded = ("-" if rounded < 0 else ""), abs(rounded)
    if 0 < rounded < SMALL:
        return f"{sign}${rounded:f}"
    return f"{sign}${rounded:,.{places}f}"


def usd(x: float | None, unknown: str = "unknown") -> str:
    """A total: ``$1,234.57``."""
    return unknown if x is None else _amount(x, 2)


def usd_per_hour(x: float | None, unknown: str = "unknown") -> str:
    """A rate: ``$0.322/h``, ``$0.0042/h``."""
    return unknown if x is None else _amount(x, 3) + "/h"


def usd_per_month(x: float | None, unknown: str = "unknown") -> str:
    """A monthly figure: ``$12.30/month``."""
    return unknown if x is None else _amount(x, 2) + "/month"


def usd_per_gb(x: float | None, unknown: str = "unknown") -> str:
    """A price per GB (egress): ``$0.117/GB``, the digits of a rate."""
    return unknown if x is None else _amount(x, 3) + "/GB"
