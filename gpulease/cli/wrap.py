"""Plain lines a command prints (not a rich table) wrapped between words at the reader's width: the terminal's
columns on a terminal; piped, ``COLUMNS`` when set, else wide (``conventions.PIPED_WIDTH``). A word is never cut
(a path, a URL, an instance type or a price stays whole), a quoted shell word (``'/home/ada/my runs/Pulumi.a.yaml'``,
as ``shlex.quote`` writes a path with a space) stays whole with its spaces, so a command pasted from the screen
names the same file, and a continued line is indented under its own."""

from __future__ import annotations

import itertools
import shutil
import sys

from gpulease.cli.conventions import piped_width

BLANK = " "
"""Where a line may break: an ASCII space, as ``textwrap`` breaks (tabs are expanded first). A no-break space
(U+00A0, U+2003 ...) is part of its word: never a break, never dropped."""

QUOTES = "'\""
"""The quotes that open a span of a shell word: ``'...'`` (nothing escapes inside) or ``"..."`` (a backslash escapes
the next character)."""


def _blank(char: str) -> bool:
    return char == BLANK


def _span_end(line: str, at: int) -> int | None:
    """Where the quoted span that opens at ``at`` ends (after its closing quote), None when it never closes."""
    quote, escaped = line[at], False
    for i in range(at + 1, len(line)):
        if escaped:
            escaped = False
        elif line[i] == "\\" and quote == '"':
            escaped = True
        elif line[i] == quote:
            return i + 1
    return None


def _word_end(line: str, start: int, unclosed: set[str]) -> int:
    """Where the word that begins at ``start`` ends: at the first blank outside quotes. A quote opens a span (spaces
    and all) at the word's start, after ``=`` (``--output='a b'``) and anywhere after a span (a shell word is a run of
    quoted and unquoted parts: ``'/home/ada/Ada'"'"'s runs/x'``, as ``shlex.quote`` writes an apostrophe); an
    apostrophe inside a prose word (``file's``) opens nothing, nor does a quote that never closes.

    One scan left to right: a span is read once, and a quote found never to close is put in ``unclosed`` (of the
    line), for no later quote of its kind closes either: none follows an unclosed ``'``, and a ``"`` after an
    unclosed ``"`` was read inside it as escaped, so a span opening there reads the same rest of the line."""
    at, shell = start, False
    while at < len(line) and not _blank(line[at]):
        char = line[at]
        opens = char in QUOTES and char not in unclosed and (shell or at == start or line[at - 1] == "=")
        end = _span_end(line, at) if opens else None
        if end is not None:
            at, shell = end, True
        else:
            if opens:
                unclosed.add(char)
            at += 1
    return at


def words(line: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` of every word of ``line``: runs between blanks, quoted spans kept whole."""
    found, at, unclosed = [], 0, set()
    while at < len(line):
        if _blank(line[at]):
            at += 1
            continue
        end = _word_end(line, at, unclosed)
        found.append((at, end))
        at = end
    return found


def width() -> int:
    if sys.stdout.isatty():
        return max(20, shutil.get_terminal_size().columns)
    return piped_width()


def _wrap_line(line: str, limit: int, indent: str) -> list[str]:
    """``line`` in lines of at most ``limit`` characters, broken only between words (a word longer than that on a
    line of its own); the spaces between two words on one line kept as they were, those at a break dropped."""
    spans = words(line)
    if not spans:
        return [line]
    out: list[str] = []
    current = line[:spans[0][1]]  # the line's own indentation kept
    for (_, before_end), (start, end) in itertools.pairwise(spans):
        gap, word = line[before_end:start], line[start:end]
        if len(current) + len(gap) + len(word) <= limit:
            current += gap + word
        else:
            out.append(current)
            current = indent + word
    out.append(current)
    return out


def _lines(text: str) -> list[str]:
    """The lines of ``text``, split at newlines only (``str.splitlines`` would also split, and drop, a U+0085 or
    U+2028 inside a line); a final newline ends the last line, as for ``splitlines``."""
    lines = text.split("\n")
    return lines[:-1] if len(lines) > 1 and lines[-1] == "" else lines


def wrapped(text: str, columns: int | None = None, *, hang: int | None = None) -> str:
    """Every line of ``text`` wrapped at ``columns`` (default ``width()``), continuation lines indented two more
    than the line they continue (``hang``: that many spaces instead, under a column)."""
    limit = columns or width()
    out = []
    for line in _lines(text.expandtabs()):
        indent = " " * (len(line) - len(line.lstrip(" ")) + 2) if hang is None else " " * hang
        out += _wrap_line(line, limit, indent)
    return "\n".join(out)


def say(text: str, *, hang: int | None = None) -> None:
    """``print`` of ``text``, wrapped."""
    print(wrapped(text, hang=hang))
