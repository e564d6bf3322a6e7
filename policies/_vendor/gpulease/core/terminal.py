"""What a report's output is laid out at (the width when piped) and written through (no spaces at line ends).

Piped, a report follows ``COLUMNS`` when it holds a sensible width, as a terminal's width would be followed; else
it is wide (``PIPED_WIDTH``), so that a log keeps a table's rows whole.


rich pads every cell of a table to its column's width, the last one too, and leaves the space it wrapped at on
the line it ended; on a terminal that is invisible, in a pasted report, a diff or a log it is noise. ``Trimmed``
is the file a report's console writes to: each line goes on without the spaces that end it (a colour reset after
them stays), everything else as it is."""

from __future__ import annotations

import io
import os
import re
import sys
from typing import IO

PIPED_WIDTH = 160
"""The width of a report piped without ``COLUMNS``."""


def piped_width(default: int = PIPED_WIDTH) -> int:
    """``COLUMNS`` when it holds a sensible width (20-1000), else ``default``."""
    try:
        width = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return default
    return width if 20 <= width <= 1000 else default


_TRAILING = re.compile(r" +((?:\x1b\[[0-9;]*m)*)\Z")


class Trimmed(io.TextIOBase):
    """``target`` (default: ``sys.stdout`` as it is at each write, so a captured output is followed) with the
    spaces at the end of each line dropped; the spaces at the end of a write are held until the rest of their line
    comes."""

    def __init__(self, target: IO[str] | None = None):
        self._target = target
        self._held = ""

    @property
    def stream(self) -> IO[str]:
        return self._target if self._target is not None else sys.stdout

    def write(self, text: str) -> int:
        lines = (self._held + text).split("\n")
        last = lines.pop()
        match = _TRAILING.search(last)
        self._held = match.group(0) if match else ""
        last = last[: match.start()] if match else last
        out = "".join(_TRAILING.sub(r"\1", line) + "\n" for line in lines) + last
        if out:
            self.stream.write(out)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", None) or "utf-8"
