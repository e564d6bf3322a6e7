"""Plain lines a command prints (not a rich table) wrapped between words at the reader's width: the terminal's
columns on a terminal; piped, ``COLUMNS`` when set, else wide (``conventions.PIPED_WIDTH``). A word is never cut
(a path, a URL, an instance type or a price stays whole), a quoted shell word (``'/home/ada/my runs/Pulumi.a.yaml'``,
as ``shlex.quote`` writes a path with a space) stays whole with its spaces, so a command pasted from the screen
names the same file, and a continued line is indented under its own."""

from __future__ import annotations

import itertools
import re
import shutil
import sys

from gpulease.cli.conventions import piped_width

WORD = re.compile(r"(?:(?<![^\s=])'[^']*'|\S)+")
"""A word: a run of non-blank characters, where a ``'`` that begins a word (or follows ``=``: ``--output='a b'``)
opens a quoted span that runs to the next ``'``, spaces and all. An apostrophe inside a word (``file's``) opens
nothing."""


def width() -> int:
    if sys.stdout.isatty():
        return max(20, shutil.get_terminal_size().columns)
    return piped_width()


def _wrap_line(line: str, limit: int, indent: str) -> list[str]:
    """``line`` in lines of at most ``limit`` characters, broken only between words (a word longer than that on a
    line of its own); the spaces between two words on one line kept as they were, those at a break dropped."""
    words = list(WORD.finditer(line))
    if not words:
        return [line]
    out: list[str] = []
    current = line[:words[0].end()]  # the line's own indentation kept
    for before, word in itertools.pairwise(words):
        gap = line[before.end():word.start()]
        if len(current) + len(gap) + len(word.group()) <= limit:
            current += gap + word.group()
        else:
            out.append(current)
            current = indent + word.group()
    out.append(current)
    return out


def wrapped(text: str, columns: int | None = None, *, hang: int | None = None) -> str:
    """Every line of ``text`` wrapped at ``columns`` (default ``width()``), continuation lines indented two more
    than the line they continue (``hang``: that many spaces instead, under a column)."""
    limit = columns or width()
    out = []
    for line in text.expandtabs().splitlines() or [""]:
        indent = " " * (len(line) - len(line.lstrip(" ")) + 2) if hang is None else " " * hang
        out += _wrap_line(line, limit, indent)
    return "\n".join(out)


def say(text: str, *, hang: int | None = None) -> None:
    """``print`` of ``text``, wrapped."""
    print(wrapped(text, hang=hang))
