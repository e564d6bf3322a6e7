"""``--help`` wrapped to the terminal (at most 80 columns), the exit-code table kept a table."""

from __future__ import annotations

import argparse
import re

HELP_MAX_WIDTH = 80
"""``--help`` is wrapped to the terminal, at most this wide (a wide terminal reads better at 80)."""
_HANGING = re.compile(r"^(\s+\S+\s{2,})\S")


def help_width() -> int:
    """The terminal's columns (``COLUMNS`` first, as argparse reads them), at most ``HELP_MAX_WIDTH``, at least 20."""
    import shutil

    return max(20, min(shutil.get_terminal_size((HELP_MAX_WIDTH, 24)).columns, HELP_MAX_WIDTH))


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs wrapped to ``help_width()``; a line that starts indented (``  2    bad input ...``)
    keeps its indent and wraps under its text, so the exit-code table stays a table at 40 columns too."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        width = width or help_width() - 1
        super().__init__(prog, indent_increment, min(max_help_position, max(width // 3, 8)), width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        out = []
        for line in text.splitlines():
            if not line.strip():
                out.append("")
                continue
            lead = line[: len(line) - len(line.lstrip())]
            hang = _HANGING.match(line)
            under = " " * len(hang.group(1)) if hang and len(hang.group(1)) < width // 2 else lead + "  " * bool(lead)
            out.append(textwrap.fill(line.strip(), width, initial_indent=indent + lead,
                                     subsequent_indent=indent + under, break_on_hyphens=False))
        return "\n".join(out)
