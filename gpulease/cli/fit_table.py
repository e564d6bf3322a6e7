"""Tables that never cut a word: figures, names, instance types and dates are kept whole.

Each column is a figure (no wrapping: its widest cell, or the header, is its width) or prose (it wraps between words,
never inside one: its longest word is its least width). When the least widths do not fit the console, columns are
taken out in the order given and their cells said below the table, one line per column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text


@dataclass
class Col:
    header: str
    justify: str = "left"
    figure: bool = False
    cells: list[str] = field(default_factory=list)
    drop: int = 0
    """0: never taken out; otherwise the order in which columns are taken out when they do not fit (1 first)."""
    below: str | None = ""
    """How the column is said below the table when taken out (default: its header; None: the caller says it)."""

    def texts(self) -> list[str]:
        return [self.header, *(Text.from_markup(c).plain for c in self.cells)]

    def least(self) -> int:
        texts = self.texts()
        if self.figure:
            return max(len(line) for t in texts for line in (t.splitlines() or [""]))
        return max((len(word) for t in texts for word in t.split()), default=1)

    def most(self) -> int:
        return max(len(line) for t in self.texts() for line in (t.splitlines() or [""]))


def overhead(count: int, simple: bool) -> int:
    """Columns of the console a table takes beyond its cells: padding, edges and rules between columns."""
    if simple:  # box.SIMPLE_HEAD, pad_edge=False: edges 2, dividers count-1, padding 2 per column less the two edges
        return 2 + (count - 1) + 2 * count - 2
    return 2 + (count - 1) + 2 * count  # a boxed table with its edge padding


def fit(cols: list[Col], width: int, simple: bool = True) -> tuple[list[Col], list[Col], list[int]]:
    """The columns kept, the ones taken out (to be said below) and the kept columns' widths."""
    kept = list(cols)
    out: list[Col] = []
    while sum(c.least() for c in kept) + overhead(len(kept), simple) > width:
        droppable = [c for c in kept if c.drop]
        if not droppable:
            break
        first = min(droppable, key=lambda c: c.drop)
        kept.remove(first)
        out.append(first)
    widths = [c.least() for c in kept]
    spare = width - overhead(len(kept), simple) - sum(widths)
    while spare > 0:  # the room left goes to prose columns that would wrap, one column at a time
        short = [i for i, c in enumerate(kept) if widths[i] < c.most()]
        if not short:
            break
        for i in short:
            if spare <= 0:
                break
            widths[i] += 1
            spare -= 1
    return kept, out, widths


def render(console: Console, cols: list[Col], keys: list[str], title: str, simple: bool = True,
           each: str = "each line") -> list[Col]:
    """Builds the table at the console's width and prints what was taken out after it. ``keys`` name each row in the
    lines below the table."""
    kept, out, widths = fit(cols, console.width, simple)
    table = Table(title=title, title_justify="left", **({"box": box.SIMPLE_HEAD, "pad_edge": False} if simple else {}))
    for col, w in zip(kept, widths, strict=True):
        table.add_column(escape(col.header), justify=col.justify, no_wrap=col.figure,  # type: ignore[arg-type]
                         overflow="fold", width=w)
    rows = len(keys)
    for r in range(rows):
        table.add_row(*[col.cells[r] for col in kept])
    console.print(table)
    for col in out:
        if col.below is None:
            continue
        said = [(k, Text.from_markup(v).plain) for k, v in zip(keys, col.cells, strict=True) if v.strip()]
        if said:
            console.print(f"{col.below or col.header}, {each}: " + ", ".join(f"{k} {v}" for k, v in said),
                          overflow="fold", markup=False)
    return out


def distinct_keys(keys: list[str], details: list[str]) -> list[str]:
    """``keys`` that name one row each in the lines below a table: a key several rows share (a resource billed for an
    instance, its disk and its address) gets its row's detail, short of any parenthesis, in parentheses."""
    counts = {k: keys.count(k) for k in keys}
    return [f"{k} ({d.split(' (', 1)[0].strip()})" if counts[k] > 1 and d.strip() else k
            for k, d in zip(keys, details, strict=True)]


def plain(value: Any) -> str:
    return "" if value is None else str(value)
