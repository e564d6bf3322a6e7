"""Remote values (tags, errors, instance records) printed through rich: shown as themselves, never as styling, a
markup error or a terminal code."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from rich.console import Console

from gpulease.cli.ls import print_table
from gpulease.cli.reap import print_report
from gpulease.core.vocabulary import TAG_OWNER
from gpulease.inventory.acting import SweepReport
from gpulease.inventory.resources import Instance, RegionInventory

HOSTILE = ("[/x]", "[red]x[/red]")


@pytest.mark.parametrize("raw", HOSTILE)
def test_ls_shows_a_hostile_owner_tag_as_itself(raw: str) -> None:
    now = datetime.now(UTC)
    inv = RegionInventory("us-east-1", instances=[Instance("i-1", "us-east-1", "running", "g5.xlarge", "on-demand",
                                                           now - timedelta(hours=1), None, {TAG_OWNER: raw})])
    console = Console(record=True, width=400)
    print_table([inv], now, console)
    assert raw in console.export_text()


@pytest.mark.parametrize("raw", [*HOSTILE, "\x1b[31mred"])
def test_reap_errors_are_shown_as_themselves(raw: str) -> None:
    report = SweepReport("1", ["us-east-1"], False, datetime.now(UTC), [])
    report.errors.append(f"us-east-1: {raw}")
    console = Console(record=True, width=200)
    print_report(report, console, show_kept=False)
    text = console.export_text()
    assert "\x1b" not in text and (raw in text or "\\x1b[31mred" in text)


def test_the_summary_shows_a_markup_tag_as_itself() -> None:
    from gpulease.ephemeral.progress import print_summary
    console = Console(record=True, width=300)
    print_summary({"stack": "s", "outcome": "failed", "error": "instance i-1 reported NOT ready: [red]disk[/red] failed",
                   "steps": [], "failedArtifacts": ["'[b]m[/b]' (not collected)"]}, console)
    text = console.export_text()
    assert "[red]disk[/red]" in text and "'[b]m[/b]'" in text
