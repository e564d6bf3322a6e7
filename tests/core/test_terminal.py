"""A report's console writes through ``Trimmed``: no line ends in spaces, a colour reset after them stays, spaces
at the end of one write are kept when the rest of their line follows."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console
from rich.table import Table

from gpulease.core.terminal import Trimmed


def test_spaces_ending_a_line_are_dropped_and_the_rest_is_kept() -> None:
    out = io.StringIO()
    trimmed = Trimmed(out)
    trimmed.write("a  \nb   ")
    trimmed.write("c  \x1b[0m\n  d\n")
    assert out.getvalue() == "a\nb   c\x1b[0m\n  d\n"


def test_a_padded_rich_table_comes_out_without_trailing_spaces() -> None:
    out = io.StringIO()
    table = Table("name", "note", box=box.SIMPLE_HEAD, pad_edge=False)  # no right border: padded to the width
    table.add_row("x", "short")
    table.add_row("a-much-longer-name", "")
    plain = io.StringIO()
    Console(file=plain, width=80, color_system=None).print(table)
    assert any(line != line.rstrip() for line in plain.getvalue().splitlines())  # what rich writes by itself
    Console(file=Trimmed(out), width=80, color_system=None).print(table)
    assert out.getvalue().splitlines() == [line.rstrip() for line in plain.getvalue().splitlines()]
