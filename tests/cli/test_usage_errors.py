"""Usage mistakes: a flag is never taken from its first letters (only suggested), a suggestion is made only for a
near miss, and with ``--json`` on the command line a usage mistake is the envelope on stdout too (one line on
stderr, exit 2), whatever the command."""

from __future__ import annotations

import json

import pytest

from gpulease.cli.main import main


def _exit_code(argv: list[str]) -> int:
    """The exit code of a command line: a usage mistake exits from the parser (SystemExit), as on a terminal."""
    try:
        return main(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)


@pytest.mark.parametrize(("argv", "line"), [
    (["reap", "--e"], "gpulease reap: unrecognized arguments: --e; --e: did you mean '--execute'?; see gpulease reap "
                      "--help"),
    (["down", "s", "--a", "--y"], "gpulease down: unrecognized arguments: --a --y; --a: did you mean '--all'?; --y: "
                                  "did you mean '--yes'?; see gpulease down --help"),
    (["plan", "aws-lora-7b", "--bogus", "x"], "gpulease plan: unrecognized arguments: --bogus x; see gpulease plan "
                                              "--help"),
    (["plan", "aws-lora-7b", "--orgg", "x"], "gpulease plan: unrecognized arguments: --orgg x; --orgg: did you mean "
                                             "'--org'?; see gpulease plan --help"),
    (["schema", "--bogus"], "gpulease schema: unrecognized arguments: --bogus; see gpulease schema --help"),
])
def test_an_abbreviated_or_unknown_flag_is_refused_with_a_near_miss_only(argv, line, capsys):
    assert _exit_code(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == line + "\n"


@pytest.mark.parametrize(("argv", "report", "message"), [
    (["logs", "--json"], "logs", "gpulease logs: the following arguments are required: stack"),
    (["logs", "s", "--lines", "x", "--json"], "logs", "gpulease logs: argument --lines/-n: 'x' is not a number"),
    (["logs", "s", "--bogus", "--json"], "logs", "gpulease logs: unrecognized arguments: --bogus"),
    (["size", "--json"], "size", "gpulease size: the following arguments are required: --params"),
    (["catalog", "--json"], "catalog", "gpulease catalog: the following arguments are required: ACTION"),
    (["ephemeral", "--json"], "ephemeral", "gpulease ephemeral: the following arguments are required: SUBCOMMAND"),
    (["push", "aws-lora-7b", "--json"], "push", "gpulease push: the following arguments are required: path"),
    (["plan", "--json", "--bogus", "x"], "plan", "gpulease plan: "),
    (["plan", "aws-lora-7b", "--format", "json", "--bogus", "x"], "plan", "gpulease plan: unrecognized arguments"),
    (["schema", "--json", "--write", "--check"], "schema",
     "gpulease schema: argument --check: not allowed with argument --write; see gpulease schema --help"),
    (["ssh", "aws-lora-7b", "--json", "--bogus"], "ssh", "gpulease ssh: unrecognized arguments: --bogus"),
    (["pln", "--json"], "usage", "'pln' is not a command; did you mean 'plan'?"),
])
def test_with_json_a_usage_mistake_is_the_envelope_and_one_line(argv, report, message, capsys):
    assert _exit_code(argv) == 2
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["report"] == f"gpulease {report}" and doc["ok"] is False and doc["data"] is None
    [entry] = doc["errors"]
    assert entry["code"] == "bad-input" and entry["message"].startswith(message)
    assert captured.err.splitlines() == [entry["message"] if report != "usage" else f"gpulease: {entry['message']}"]
