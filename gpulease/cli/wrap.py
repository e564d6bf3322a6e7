"""Plain lines a command prints (not a rich table) wrapped between words at the reader's width: the terminal's
columns on a terminal; piped, ``COLUMNS`` when set, else wide (``conventions.PIPED_WIDTH``). A word is never cut
(a path, a URL, an instance type or a price stays whole), and a continued line is indented under its own."""

from __future__ import annotations

import shutil
import sys
import textwrap

from gpulease.cli.conventions import piped_width


def width() -> int:
    if sys.stdout.isatty():
        return max(20, shutil.get_terminal_size().columns)
    return piped_width()


def wrapped(text: str, columns: int | None = None, *, hang: int | None = None) -> str:
    """Every line of ``text`` wrapped at ``columns`` (default ``width()``), continuation lines indented two more
    than the line they continue (``hang``: that many spaces instead, under a column)."""
    limit = columns or width()
    out = []
    for line in text.splitlines() or [""]:
        indent = " " * (len(line) - len(line.lstrip(" ")) + 2) if hang is None else " " * hang
        out += textwrap.wrap(line, limit, subsequent_indent=indent, break_long_words=False,
                             break_on_hyphens=False, replace_whitespace=False, drop_whitespace=True) or [line]
    return "\n".join(out)


def say(text: str, *, hang: int | None = None) -> None:
    """``print`` of ``text``, wrapped."""
    print(wrapped(text, hang=hang))
