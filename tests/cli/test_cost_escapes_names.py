"""``gpulease cost`` once printed a stack file's name raw: a stack file named
``Pulumi.e\\x1b[31mred.yaml`` (or holding U+202E) that does not load is reported as ``e<ESC>[31mred: /.../Pulumi.e<ESC>
[31mred.yaml:3: ...`` with the ESC byte itself, recolouring the terminal (``plan``, ``logs``, ``status`` escape it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.cli.main import main
from gpulease.review.stacks import PROJECT_ROOT


@pytest.mark.parametrize("body", ["config:\n  a: [\n", "config: {}\n"])
def test_cost_never_prints_a_control_character_of_a_stack_name(capsys, body: str) -> None:
    path = Path(PROJECT_ROOT) / "stacks" / "Pulumi.e\x1b[31mred\u202e.yaml"
    path.write_text(body)
    try:
        main(["cost", str(path)])
    except SystemExit:
        pass
    finally:
        path.unlink()
    out = capsys.readouterr()
    assert "\x1b" not in out.out + out.err and "\u202e" not in out.out + out.err
    assert "e\\x1b[31mred\\u202e" in out.out + out.err  # named, escaped


def test_ephemeral_teardown_line_escapes_the_stack_name_and_the_error() -> None:
    from rich.console import Console

    from gpulease.cli.ephemeral import _teardown_line

    console = Console(record=True, width=200, force_terminal=False)
    console.print(_teardown_line({"stack": "s\x1b[31m\u202e", "teardown": {"removed": False, "error": "[bold]x\x1b"}}))
    shown = console.export_text()
    assert "\x1b" not in shown and "\u202e" not in shown
    assert shown.strip() == "s\\x1b[31m\\u202e: NOT torn down: [bold]x\\x1b"  # markup in the error shown as text
