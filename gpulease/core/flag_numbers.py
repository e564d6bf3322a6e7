"""The one parser of numbers given on the command line (every numeric flag's argparse type).

Python's ``float`` and ``int`` read any Unicode decimal digit (``float('٣٠٠') == 300.0``, full-width ``１２``) and
underscores (``1_000``); a flag reads only ASCII digits, in plain or exponent notation, finite and in its range.
A refusal is one line naming what was wrong and what is accepted, range included ("'-3' is not a number of
attempts; accepted: a whole number from 1 to 20, e.g. 3 (ASCII digits)"), which argparse prints after the flag's
name ("argument --max-attempts: ..."), with exit 2."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

from gpulease.core.printable import escaped

DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?")
"""A decimal number in ASCII: ``30``, ``0.5``, ``.5``, ``1e3``. ``[0-9]``, never ``\\d``: for text, ``\\d`` matches
every Unicode decimal digit (https://docs.python.org/3/library/re.html, "\\d"), which float() then reads."""
WHOLE = re.compile(r"[0-9]{1,18}")
"""A whole number in ASCII digits, without a sign."""
MAX_TEXT = 40


def shown(text: str) -> str:
    """The text as the refusal quotes it: a non-ASCII character written as its escape (``'\\u0663'``)."""
    # Quoted by hand, not repr(): repr would double the backslash of each escape (``'\\uff18'``). A backslash typed
    # is doubled first, so an escape shown is always one the text did not hold as typed characters.
    ascii_text = text.replace("\\", "\\\\").encode("ascii", "backslashreplace").decode("ascii")
    return "'" + escaped(ascii_text).replace("'", "\\'") + "'"


def read_number(text: str, *, whole: bool = False) -> float | None:
    """The number ``text`` writes in ASCII digits, or None (Unicode digits, ``1_000``, ``inf``, ``nan``, too long)."""
    pattern = WHOLE if whole else DECIMAL
    if len(text) > MAX_TEXT or not pattern.fullmatch(text):  # [0-9] is ASCII only; \d would read '٣'
        return None
    value = int(text) if whole else float(text)
    return value if math.isfinite(value) else None


def _figure(value: float) -> str:
    """A bound as the refusal writes it: ``10080``, ``0.9``, ``1000000000`` (never ``1e+09``)."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def number(what: str, low: float, high: float, *, example: str, whole: bool = False, above: bool = False,
           accepted: str | None = None) -> Callable[[str], float]:
    """An argparse type: ``what`` (e.g. "a number of seconds") in ``[low, high]`` (``(low, high]`` when ``above``),
    in ASCII digits; a whole number when ``whole``."""
    kind = "a whole number" if whole else "a number"
    span = (f"above {_figure(low)} and at most {_figure(high)}" if above
            else f"from {_figure(low)} to {_figure(high)}")
    rule = accepted or f"{kind} {span}"

    def parse(text: str) -> float:
        value = read_number(text, whole=whole)
        if value is None or not (low < value if above else low <= value) or value > high:
            raise argparse.ArgumentTypeError(f"{shown(text)} is not {what}; accepted: {rule}, e.g. {example} "
                                             "(ASCII digits)")
        return value

    parse.__name__ = what
    parse.ascii_number = True  # type: ignore[attr-defined]  # the test finds every numeric flag by it
    return parse
