"""The one way a price is written for a person (gpulease.core.money)."""

from __future__ import annotations

import math
import re

import pytest

from gpulease.core.money import usd, usd_per_gb, usd_per_hour, usd_per_month

GRAMMAR = re.compile(r"-?\$[0-9][0-9,]*\.[0-9]{2,}(/h|/month)?")


def test_exact_strings() -> None:
    assert usd(1234.567) == "$1,234.57"
    assert usd_per_hour(0.3219) == "$0.322/h"
    assert usd_per_hour(0.0042) == "$0.0042/h"
    assert usd_per_hour(1234.5) == "$1,234.500/h"
    assert usd_per_month(12.3) == "$12.30/month"
    assert usd_per_month(0.0042) == "$0.0042/month"
    assert usd_per_gb(0.117) == "$0.117/GB" and usd_per_gb(0.09) == "$0.090/GB"
    assert usd(0) == "$0.00" and usd_per_hour(0) == "$0.000/h"


@pytest.mark.parametrize(("value", "shown"), [(1.005, "$1.01"), (2.675, "$2.68"), (0.125, "$0.13"), (1.004, "$1.00")])
def test_half_up_on_the_written_digits(value: float, shown: str) -> None:
    assert usd(value) == shown


def test_rate_half_up() -> None:
    assert usd_per_hour(0.1235) == "$0.124/h"
    assert usd_per_hour(0.0125) == "$0.013/h"
    assert usd_per_hour(0.00995) == "$0.010/h"  # two significant digits round up to a cent: shown as a cent


def test_none_is_the_callers_word() -> None:
    assert usd(None) == "unknown"
    assert usd_per_hour(None, "n/a") == "n/a"
    assert usd_per_month(None, "price unknown") == "price unknown"


def test_negative_keeps_its_sign_in_front() -> None:
    assert usd(-1.5) == "-$1.50"
    assert usd_per_hour(-0.0042) == "-$0.0042/h"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "1.0", True])
@pytest.mark.parametrize("show", [usd, usd_per_hour, usd_per_month])
def test_not_a_number_is_refused(show, bad) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="price"):
        show(bad)


def test_huge_values_keep_separators() -> None:
    assert usd(1e12) == "$1,000,000,000,000.00"
    assert usd_per_hour(1e12) == "$1,000,000,000,000.000/h"
    assert usd_per_month(1234567.891) == "$1,234,567.89/month"


@pytest.mark.parametrize("value", [1e-9, 0.00001, 0.0004, 0.00049, 0.004, 0.0049, 0.005, 0.0099, 0.01, 0.3, 7.0])
@pytest.mark.parametrize("show", [usd, usd_per_hour, usd_per_month])
def test_a_positive_value_never_reads_as_zero(show, value) -> None:  # type: ignore[no-untyped-def]
    shown = show(value)
    assert GRAMMAR.fullmatch(shown), shown
    assert re.search(r"[1-9]", shown), shown


def test_shown_value_is_the_figure_usd_writes() -> None:
    from decimal import Decimal

    from gpulease.core.money import shown_value

    assert shown_value(1.005) == Decimal("1.01") and shown_value(2.675) == Decimal("2.68")  # not the float's 1.00, 2.67
    assert shown_value(0.0042) == Decimal("0.0042") and shown_value(0.00999) == Decimal("0.01")
    assert shown_value(-1.505) == Decimal("-1.51") and shown_value(0) == 0
    for x in (1.005, 2.675, 0.0042, 0.00999, 1234.565, -1.505, -0.0042, 0, 7, 0.125, 99999.995):
        written = usd(x)
        assert Decimal(written.replace("$", "").replace(",", "")) == shown_value(x), (x, written)
    with pytest.raises(ValueError):
        shown_value(float("nan"))
    with pytest.raises(ValueError):
        shown_value(True)


def test_the_cost_rows_note_adds_the_shown_figures() -> None:
    from types import SimpleNamespace

    from gpulease.cli.cost_rounding import lines_rounded as _rows_rounded

    # Shown $2.30 + $0.0035 + $0.0015 is $2.305 exactly, $2.31 half up; the same figures added as floats make
    # 2.3049999..., which would read $2.30, the total's figure, and the note would be missing.
    lines = [SimpleNamespace(worst_case_usd=v) for v in (2.3, 0.0035, 0.0015)]
    cost = SimpleNamespace(lines=lines, worst_case_known=True, worst_case_usd=2.3)
    assert _rows_rounded(cost) == " (the lines, each rounded, add up to $2.31)"  # type: ignore[arg-type]
    cost.worst_case_usd = 2.305  # shown $2.31: the same as the lines' sum, no note
    assert _rows_rounded(cost) == ""  # type: ignore[arg-type]
