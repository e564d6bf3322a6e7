"""The wrapper keeps every shell word a command line holds whole (a path quoted by ``shlex.quote`` that holds an
apostrophe and a space: ``'/home/ada/Ada'"'"'s runs/...'``) and breaks ordinary prose where ``textwrap`` does: at
ASCII blanks only, never at a no-break space (which stays in the text)."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from gpulease.cli.wrap import wrapped


@pytest.mark.parametrize("columns", [30, 40, 50, 60])
def test_a_quoted_path_with_an_apostrophe_and_a_space_stays_on_one_line(columns):
    path = "/home/ada/Ada's runs/Pulumi.ab.yaml"
    text = f"next: gpulease check {shlex.quote(path)}, then gpulease up {shlex.quote(path)}"
    lines = wrapped(text, columns).splitlines()
    assert sum(line.count(shlex.quote(path)) for line in lines) == 2, lines  # each one whole on its line
    for line in lines:
        if line.lstrip().startswith("'"):  # a line the path begins, pasted after `gpulease check`
            done = subprocess.run(["bash", "-c", 'printf "%s\\0" ' + line.split(",", 1)[0]],
                                  capture_output=True, check=True)
            assert done.stdout.decode().split("\0")[0] == path, lines  # the same file, read from the screen


def test_a_no_break_space_is_neither_a_break_nor_lost():
    text = "wrote /srv/runs/a\u00a0b/Pulumi.ab.yaml: 8B lora"
    out = wrapped(text, 12)
    assert "/srv/runs/a\u00a0b/Pulumi.ab.yaml:" in out, repr(out)
    assert out.count("\u00a0") == 1, repr(out)


@pytest.mark.parametrize("space", ["\u2003", "\u202f", "\u3000"])
def test_other_wide_or_narrow_spaces_stay_inside_their_word(space):
    text = f"next: gpulease check /srv/a{space}b/Pulumi.ab.yaml now"
    out = wrapped(text, 16)
    assert any(line.strip() == f"/srv/a{space}b/Pulumi.ab.yaml" for line in out.splitlines()), repr(out)


def test_no_character_is_lost_but_the_blanks_at_a_break():
    text = "wrote a\u2028line sep and \u0085 next, a\u00a0b, x'y \"q r\" end"
    for columns in range(8, 60, 3):
        out = wrapped(text, columns)
        assert out.replace("\n", "").replace(" ", "") == text.replace(" ", ""), (columns, repr(out))


@pytest.mark.parametrize("columns", [20, 30])
def test_a_prose_apostrophe_opens_no_quote(columns):
    text = "the stack's file is read and the bucket's objects are kept for later runs"
    lines = wrapped(text, columns).splitlines()
    assert all(len(line) <= columns for line in lines), lines
