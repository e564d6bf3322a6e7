"""Issue 23, round 2: names and values printed raw."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rich.console import Console

from gpulease.cli.reap import print_report
from gpulease.inventory import acting, decide
from gpulease.inventory.acting import Outcome, SweepReport


def test_init_output_with_escape_is_refused(tmp_path, monkeypatch) -> None:
    from gpulease.cli.main import main
    target = tmp_path / "x\x1b[31m\u202e.yaml"
    code = main(["init", "--name", "atkx", "--owner", "a@b.co", "--params", "8B", "--no-port", "--budget", "50",
                 "--no-review", "--output", str(target)])
    assert code == 2 and not target.exists()


def test_reap_table_shows_a_hostile_tag_value_as_itself() -> None:
    class Settings:
        now = datetime.now(UTC)
        grace = timedelta(hours=1)

    for raw in ("[/x]", "[red]x[/red]"):
        _, why = decide.expiry_check({"gpulease:expires-at": raw}, Settings)
        report = SweepReport("1", ["us-east-1"], False, Settings.now,
                             [Outcome("instance", "i-1", "us-east-1", "keep", acting.KEPT, why, "")])
        console = Console(record=True, width=200)
        print_report(report, console, show_kept=True)  # '[/x]': rich MarkupError traceback
        assert raw in console.export_text()  # '[red]x[/red]' is shown as 'x'


def test_ephemeral_summary_never_prints_an_instance_record_raw() -> None:
    from gpulease.ephemeral.progress import print_summary

    # ChannelError text built from ready.json's "failed" list (instance-written), as state.error carries it
    for failed in ("\x1b[31mdisk", "[/x]"):
        console = Console(record=True, width=200)
        print_summary({"stack": "s", "outcome": "failed", "error": f"instance i-1 reported NOT ready: {failed} failed",
                       "steps": []}, console)  # '[/x]': MarkupError traceback after teardown
        assert "\x1b" not in console.export_text()
