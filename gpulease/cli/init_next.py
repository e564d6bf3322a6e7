"""The ``next:`` line ``gpulease init`` ends with: a command that finds the stack file it wrote, by name where
``plan`` looks for one, by its path when that finds it, else the move that puts it where ``plan`` looks."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from gpulease.core.errors import UserError
from gpulease.core.printable import printable
from gpulease.lifecycle.answers import Answers
from gpulease.lifecycle.stackfile import target_path
from gpulease.review import stacks
from gpulease.review.stack_commands import stack_last


def _finds(target: str, path: Path) -> bool:
    """Whether ``gpulease plan TARGET`` (and check, up) reads the stack file at ``path``."""
    try:
        return stacks.resolve_one(target).resolve() == path.resolve()
    except (UserError, OSError, ValueError):
        return False


def stack_target(path: Path, name: str) -> str | None:
    """What names the written stack to ``plan``, ``check`` and ``up``: its name when a bare name finds this file
    (where ``plan`` looks), else its path when that finds it; None when neither does (a file outside a project,
    or not named Pulumi.NAME.yaml)."""
    if _finds(name, path):
        return name
    return shlex.quote(str(path)) if _finds(str(path), path) else None


def plan_target(path: Path, name: str) -> str:
    """What ``gpulease plan`` is given to show the written stack: ``stack_target``, else the file's path."""
    return stack_target(path, name) or shlex.quote(str(path))


def plan_words(path: Path, name: str) -> str:
    """``plan_target`` as the words after ``gpulease plan`` (after ``--`` when it begins with a dash)."""
    return " ".join(stack_last(plan_target(path, name)))


def plan_command(path: Path, name: str) -> str:
    return f"gpulease plan {plan_words(path, name)}"


def next_line(path: Path, found: Answers, *, blocked: bool) -> str:
    target = stack_target(path, found.name)
    if target is None:
        home = target_path(found, None)
        home = home if home.is_absolute() else Path.cwd() / home
        where = shlex.quote(printable(str(home)))
        if os.path.lexists(home):  # a plain mv would replace that stack without a word: never suggest it
            return (f"next: {printable(str(path))} is where no gpulease command looks for a stack, and {where} "
                    f"already holds a stack: run init again with --name another name (or mv -n -- "
                    f"{shlex.quote(printable(str(path)))} to a free Pulumi.NAME.yaml there)")
        return (f"next: {printable(str(path))} is where no gpulease command looks for a stack: mv -- "
                f"{shlex.quote(printable(str(path)))} {where}, then gpulease plan {found.name}")
    named = " ".join(stack_last(target))  # a dash-named stack after ``--``
    if blocked:
        return f"next: gpulease plan {named} shows what the review found; fix that first"
    return f"next: gpulease check {named}, then gpulease up {named}"

