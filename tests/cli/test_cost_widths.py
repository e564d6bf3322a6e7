"""``gpulease cost`` at 60 to 120 columns: an instance type, a resource name, a price, a date and a header are never
cut mid-word; what does not fit goes below the table, whole (gpulease/cli/fit_table.py)."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from gpulease.cli.cost import price_date, print_cost
from gpulease.core.money import usd, usd_per_hour, usd_per_month
from gpulease.review import stacks
from gpulease.review.engine import estimate, render_target
from gpulease.review.report import common_name_prefix
from tests.support.paths import ROOT, STACKS_DIR

WIDTHS = (60, 80, 90, 100, 110, 120)
STACKS = stacks.known_names(ROOT)


@pytest.fixture(scope="module")
def costs():
    return {name: estimate(render_target(ROOT, STACKS_DIR / f"Pulumi.{name}.yaml")) for name in STACKS}


def _render(name, cost, width: int) -> str:
    out = io.StringIO()
    print_cost(name, cost, Console(file=out, width=width, color_system=None, highlight=False))
    return out.getvalue()


def _words(text: str) -> set[str]:
    return set(text.split())


def _values(cost) -> set[str]:
    """Every token of a cell that must stay whole: names, instance types, prices and dates."""
    found: set[str] = set()
    prefix = common_name_prefix([line.resource for line in cost.lines])
    for line in cost.lines:
        found |= {line.resource[len(prefix):], line.experiment, price_date(line).split(" ")[0]}
        found |= {w.strip("()") for w in line.item.split()}
        for value, show in ((line.hourly_usd, usd_per_hour), (line.max_hourly_usd, usd_per_hour),
                            (line.worst_case_usd, usd), (line.after_destroy_monthly_usd, usd_per_month)):
            if value is not None and (show is not usd_per_month or line.retained):
                found.add(show(value))
    return {v for v in found if v}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", STACKS)
def test_every_cell_value_appears_whole(costs, name: str, width: int) -> None:
    text = _render(name, costs[name], width)
    assert all(len(line) <= width for line in text.splitlines()), text
    words = {w.strip("(),;:") for w in text.split()}
    missing = sorted(v for v in _values(costs[name]) if v not in words and v not in text.replace("\n", " "))
    assert not missing, f"{missing} cut at {width} columns:\n{text}"
    # no bare "$" or "$1" left by a cut price
    assert not [w for w in text.split() if re.fullmatch(r"\$[0-9]?", w)], text
    table = text.split("each line", 1)[1].split("\nper hour", 1)[0] if "each line" in text else text
    assert not re.search(r"\b(experime|xperiment|resourc|destro)\b", table), text
    assert "resource" in table and "worst case" in " ".join(table.split())


@pytest.mark.parametrize("width", WIDTHS)
def test_what_does_not_fit_is_said_below_the_table(costs, width: int) -> None:
    text = " ".join(_render("aws-lora-7b", costs["aws-lora-7b"], width).split())
    assert "data $16.00/month" in text or " $16.00/month " in text, text
    assert "2025-06-01" in text
