"""A command's own option typed before the command (``gpulease --json size``, ``gpulease -n 5 logs STACK``): the
top-level parser knows only ``--help`` and ``--version``, so argparse would take the option's value for a command
name (``invalid choice: 'json'``) or offer the option itself as the nearest one. Said as what it is instead: the
option belongs to the command and goes after it, with the command line that does so."""

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


def misplaced(argv: Sequence[str], commands: Sequence[str],
              parser_for: Callable[[str], argparse.ArgumentParser]) -> str | None:
    """The line for a command line that starts with an option of the command after it, else None (argparse has
    the word: ``--help``, ``--version``, an option no command after it takes, no command at all)."""
    if not argv or not argv[0].startswith("-") or argv[0].partition("=")[0] in TOP_LEVEL:
        return None
    at = next((i for i, word in enumerate(argv) if word in commands), None)
    if at is None:
        return None
    option, command = argv[0].partition("=")[0], argv[at]
    if option not in command_options(parser_for(command), command):
        return None
    fixed = shlex.join([command, *argv[:at], *argv[at + 1:]])
    return f"{option} is an option of `gpulease {command}`: put it after the command: gpulease {fixed}"
