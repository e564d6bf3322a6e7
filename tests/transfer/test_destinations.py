"""``push --to`` and ``pull``'s destination (``--dest``, the PREFIX folders) refuse names that would not read as
written: a bidirectional override (U+202E), other control and format characters, a space at either end; one line
naming the option, exit 2, nothing sent."""

from __future__ import annotations

import pytest

from gpulease.cli import main
from gpulease.core.errors import UserError
from gpulease.transfer.files import key_prefix

HIDDEN = [("data/\u202etxt.exe", "holds U+202E (RIGHT-TO-LEFT OVERRIDE)"),
          ("data/a\u200bb", "holds U+200B (ZERO WIDTH SPACE)"), ("data/a\u061cb", "holds U+061C (ARABIC LETTER MARK)"),
          ("data/a\x1bb", "holds U+001B (ESC)"), ("data/a\x85b", "holds U+0085"),
          (" data/raw", "starts or ends with a space"), ("data/raw ", "starts or ends with a space")]


@pytest.mark.parametrize(("to", "phrase"), HIDDEN)
def test_push_to_refuses_what_does_not_read_as_written(to: str, phrase: str) -> None:
    with pytest.raises(UserError) as err:
        key_prefix(to)
    assert str(err.value) == (f"--to {to!r}: {phrase}, a character that is not shown as itself (a control, format, "
                              "invisible or unassigned character); accepted: a folder in the bucket such as data/ or "
                              "data/raw/"
                              if "space" not in phrase else
                              f"--to {to!r}: {phrase}; accepted: a folder in the bucket such as data/ or data/raw/")


def test_push_cli_refuses_a_bidi_override_before_anything_is_looked_up(tmp_path, capsys) -> None:
    (tmp_path / "f.txt").write_text("x")
    assert main(["push", "aws-prep-7b", str(tmp_path / "f.txt"), "--bucket", "b12", "--to", "data/\u202eraw"]) == 2
    err = capsys.readouterr().err
    # The name is shown escaped (repr), so the refusal itself cannot be reordered on the terminal.
    assert "--to 'data/\\u202eraw': holds U+202E (RIGHT-TO-LEFT OVERRIDE)" in err and "Traceback" not in err


@pytest.mark.parametrize(("argv", "what"), [(["--dest", "results/\u202egnp.exe"], "--dest"),
                                            (["--dest", "results "], "--dest"), (["final/\u2066x/"], "PREFIX")])
def test_pull_refuses_a_destination_that_does_not_read_as_written(argv: list[str], what: str, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["pull", "aws-prep-7b", *argv, "--bucket", "b12"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"gpulease pull: argument {what}"), err
    assert "holds U+" in err[0] or "starts or ends with a space" in err[0]
    assert "\u202e" not in err[0] and "\u2066" not in err[0]


def test_visible_names_stay_accepted() -> None:
    assert key_prefix("data/données") == "data/données/"
