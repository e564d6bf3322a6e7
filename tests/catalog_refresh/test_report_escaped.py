"""``catalog refresh``'s report: what the price APIs returned (a currency, a type name, an error) shown as itself."""

from __future__ import annotations

from datetime import date

import pytest
from rich.console import Console

from gpulease.catalog_refresh import changes
from gpulease.catalog_refresh.fetched import Fetched
from gpulease.cli.catalog import print_report


@pytest.mark.parametrize("raw", ["[/x]", "[red]x[/red]"])
def test_skipped_failures_and_new_types_are_shown_as_themselves(raw: str) -> None:
    found = Fetched("aws", date(2026, 1, 1), skipped=[f"currency {raw} is not USD"], failures=[f"call {raw} failed"])
    report = changes.Report([], 0, [f"g9.{raw}"])
    console = Console(record=True, width=300)
    print_report(console, report, [found], None)  # '[/x]': rich MarkupError
    text = console.export_text()
    assert f"currency {raw} is not USD" in text and f"call {raw} failed" in text and f"g9.{raw}" in text


def test_a_changed_price_row_shows_the_type_name_as_itself() -> None:
    change = changes.Change("aws", "on-demand", "g5.[red]x[/red]", "us-east-1", 1.0, 2.0)
    console = Console(record=True, width=300)
    console.print(changes.table(changes.Report([change], 0, [])))
    assert "g5.[red]x[/red]" in console.export_text()
