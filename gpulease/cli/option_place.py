"""A command's own option typed before the command (``gpulease --json size``, ``gpulease -n 5 logs STACK``,
``gpulease -n5 logs STACK``, ``gpulease --js size``): the top-level parser knows only ``--help`` and ``--version``, so
argparse would take the option's value for a command name (``invalid choice: 'json'``) or offer the option itself as
the nearest one. Said as what it is instead: the option belongs to the command and goes after it, with the command
line that does so. The option is recognised in the command's own table of option strings as its parser reads a
word: whole, ``--name=value``, a short option with its value attached (``-n5``), or the start of one long option
(``--js``, which the parser refuses as a shortened flag: the line names the whole option, ``--json``)."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable, Sequence

TOP_LEVEL = ("-h", "--help", "--version")
"""The options of ``gpulease`` itself, before any command."""


def command_options(parser: argparse.ArgumentParser, command: str) -> set[str]:
    """Every option string of ``command``'s parser (its aliases too)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return set(action.choices[command]._option_string_actions)
    return set()


def option_of(word: str, options: set[str]) -> tuple[str, str] | None:
    """``(typed, option)`` for a word that is one of ``options`` as argparse reads it: the option part as typed and
    the option string it names, else None. ``--lines=5`` is ``--lines``; ``-n5`` is ``-n`` with ``5`` attached (or
    ``-n`` followed by more short flags); ``--js`` is ``--json`` when that is the one long option it begins."""
    if word.startswith("--"):
        typed = word.partition("=")[0]
        if typed in options:
            return typed, typed
        starting = sorted(o for o in options if o.startswith("--") and o.startswith(typed))
        return (typed, starting[0]) if len(typed) > 2 and len(starting) == 1 else None
    if word in options:
        return word, word
    if len(word) > 2 and word[1] != "-" and word[:2] in options:
        return word[:2], word[:2]
    return None


def misplaced(argv: Sequence[str], commands: Sequence[str],
              parser_for: Callable[[str], argparse.ArgumentParser]) -> str | None:
    """The line for a command line that starts with an option of the command after it (or with ``--``), else None
    (argparse has the word: ``--help``, ``--version``, an option no command after it takes, no command at all)."""
    if not argv or not argv[0].startswith("-") or argv[0].partition("=")[0] in TOP_LEVEL:
        return None
    at = next((i for i, word in enumerate(argv) if word in commands), None)
    if at is None:
        return None
    command = argv[at]
    if argv[0] == "--":
        fixed = shlex.join([command, *argv[1:at], *argv[at + 1:]])
        return f"-- (the end of the options) comes after the command, not before it: gpulease {fixed}"
    found = option_of(argv[0], command_options(parser_for(command), command))
    if found is None:
        return None
    typed, option = found
    first = option + argv[0][len(typed):]  # an abbreviation written out: the line given runs as it reads
    fixed = shlex.join([command, first, *argv[1:at], *argv[at + 1:]])
    meant = f"{typed}: did you mean {option!r}? {option}" if typed != option else option
    return f"{meant} is an option of `gpulease {command}`: put it after the command: gpulease {fixed}"
