"""Every numeric flag of every command reads ASCII digits only, through the one parser (gpulease/cli/numbers.py):
Python's own float() and int() read Unicode digits (``float('٣٠٠') == 300.0``), which no flag accepts."""

from __future__ import annotations

import argparse

import pytest

from gpulease.cli import main as cli
from gpulease.cli.main import build_parser
from gpulease.core.flag_numbers import number, read_number

HOSTILE = ["٣٠٠", "²", "１２", "३", "1_000", "٣", "1e999", "nan", "inf", "-inf", "0x10", " 30", "3" * 5000]


def _flags(parser: argparse.ArgumentParser, path: str = "gpulease") -> list[tuple[str, argparse.Action]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found += _flags(child, f"{path} {name}")
        elif action.type is not None:
            found.append((f"{path} {'/'.join(action.option_strings) or action.dest}", action))
    return found


FLAGS = _flags(build_parser())


def test_no_flag_reads_numbers_with_pythons_own_float_or_int() -> None:
    assert [name for name, action in FLAGS if action.type in (int, float, complex)] == []
    numeric = sorted(name for name, action in FLAGS if getattr(action.type, "ascii_number", False))
    for expected in ("gpulease pull --deadline-seconds", "gpulease plan --timeout", "gpulease up --wait",
                     "gpulease logs --lines/-n", "gpulease ssh --node", "gpulease status --watch",
                     "gpulease size --nodes", "gpulease size --headroom", "gpulease reap --workers",
                     "gpulease reap --grace-minutes", "gpulease ephemeral up --max-hours"):
        assert expected in numeric, numeric


@pytest.mark.parametrize("flag", [name for name, action in FLAGS if getattr(action.type, "ascii_number", False)])
@pytest.mark.parametrize("given", HOSTILE)
def test_every_numeric_flag_refuses_unicode_digits_in_one_line(flag: str, given: str) -> None:
    parse = dict(FLAGS)[flag].type
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        parse(given)
    message = str(refused.value)
    assert "\n" not in message and "(ASCII digits)" in message and "accepted: " in message
    assert message.isascii()  # the character itself is written as its escape, e.g. '\u0663\u0660\u0660'


def test_the_parser_reads_ascii_numbers_and_names_the_character_it_refuses() -> None:
    assert [read_number(t) for t in ("300", "0.5", ".5", "1e3", "+2", "-1")] == [300, 0.5, 0.5, 1000, 2, -1]
    assert [read_number(t, whole=True) for t in ("0", "12", "1.5", "-1", "٣")] == [0, 12, None, None, None]
    parse = number("a number of seconds", 0, 60, above=True, example="30")
    with pytest.raises(argparse.ArgumentTypeError, match=r"^'\\u0663\\u0660\\u0660' is not a number of seconds; "
                       r"accepted: a number above 0 and at most 60, e\.g\. 30 \(ASCII digits\)$"):
        parse("٣٠٠")
    assert parse("60") == 60 and parse("0.25") == 0.25
    attempts = number("a number of attempts", 1, 20, whole=True, example="4")
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        attempts("-3")
    assert str(refused.value) == ("'-3' is not a number of attempts; accepted: a whole number from 1 to 20, e.g. 4 "
                                  "(ASCII digits)")
    with pytest.raises(argparse.ArgumentTypeError, match=r"from 1 to 1000000000, e\.g\. 8 "):
        number("a count", 1, 10**9, whole=True, example="8")("0")


@pytest.mark.parametrize("given", ["٣٠٠", "²"])
def test_pull_deadline_in_unicode_digits_is_one_line_and_exit_2(given: str, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        cli(["pull", "dev", "--bucket", "named-bucket", "--deadline-seconds", given])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --deadline-seconds:" in err and "is not a number of seconds" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


def test_a_refused_character_is_shown_as_one_escape_and_a_typed_backslash_as_two() -> None:
    parse = number("a number of hours", 0, 720, above=True, example="8")
    with pytest.raises(argparse.ArgumentTypeError) as hit:
        parse("８")
    assert str(hit.value).startswith("'\\uff18' is not a number of hours"), str(hit.value)  # one backslash
    with pytest.raises(argparse.ArgumentTypeError) as typed:
        parse("a'b\\uff18")
    assert str(typed.value).startswith("'a\\'b\\\\uff18' is not"), str(typed.value)  # typed, not the character
