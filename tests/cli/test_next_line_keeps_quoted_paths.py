"""The ``next:`` line of ``gpulease init`` wrapped to 80 columns never breaks inside a quoted path: a path with a
space (``'/home/ada/my runs/stacks/Pulumi.ab.yaml'``) stays on one line, so the command pasted from the screen
names that file, not a path with a line break in it."""

from __future__ import annotations

import re

from gpulease.cli.main import main

FLAGS = ["--params", "8B", "--owner", "a@mylab.org", "--budget", "60", "--no-port", "--no-review"]


def test_a_quoted_path_in_the_next_line_is_never_split_across_lines(tmp_path, monkeypatch, capsys):
    here = tmp_path / "my runs"
    (here / "stacks").mkdir(parents=True)
    monkeypatch.chdir(here)
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["init", "--name", "ab", "--output", "Pulumi.ab.yaml", *FLAGS]) == 0
    capsys.readouterr()
    assert main(["init", "--name", "ab", *FLAGS]) == 0  # stacks/Pulumi.ab.yaml: named by its path
    out = capsys.readouterr().out
    tail = out[out.index("next: "):]
    quoted = re.findall(r"'[^']*'", tail)
    assert quoted, tail
    split = [q for q in quoted if "\n" in q]
    assert not split, f"a quoted path broken across lines: {split}"


def test_an_apostrophe_inside_a_word_opens_no_quote():
    from gpulease.cli.wrap import wrapped

    text = "the stack's file is written, and the review's lines follow it " * 3
    lines = wrapped(text, 40).splitlines()
    assert all(len(line) <= 40 for line in lines), lines  # prose with apostrophes still wraps
    quoted = wrapped("next: gpulease up '/home/ada/my runs/stacks/Pulumi.ab.yaml' now", 30).splitlines()
    assert "  '/home/ada/my runs/stacks/Pulumi.ab.yaml'" in quoted, quoted
