"""The ``gpulease`` commands a message prints for a stack (``connect: gpulease ssh …``, ``gpulease down … --all``,
``gpulease plan … shows why``): each names the stack in one shell word that finds the stack file it is about when
pasted where the command ran: its name when a bare name finds that file, else the file's path, shell-quoted. A word
that begins with a dash (a stack named ``-ab``) comes last, after ``--``, so the command's parser takes it as the
stack and not as an option (``gpulease down --all -- -ab``)."""

from __future__ import annotations

import shlex
from pathlib import Path

from gpulease.core.errors import UserError
from gpulease.core.printable import printable
from gpulease.core.shown import shown_path
from gpulease.review import stacks


def _finds(word: str, path: Path) -> bool:
    try:
        return stacks.resolve_one(word, stacks.PROJECT_ROOT).resolve() == path.resolve()
    except (UserError, OSError, ValueError):
        return False


def stack_word(name: str, path: Path | None) -> str:
    """The stack ``name`` (its file ``path``) as one shell word: the name when a bare name finds ``path`` (or there is
    no file: a stack made elsewhere is named to the Pulumi CLI by its name), else the file's path as it is typed
    from here, quoted (a folder such as ``my runs`` stays one word)."""
    if path is None or _finds(name, path):
        return shlex.quote(printable(name))
    return shlex.quote(printable(shown_path(path)))


def command(verb: str, name: str, path: Path | None, *rest: str) -> str:
    """``gpulease VERB STACK REST…`` for the stack ``name`` of the file ``path`` (``gpulease VERB REST… -- STACK`` for
    a stack word that begins with a dash)."""
    return " ".join(["gpulease", verb, *stack_last(stack_word(name, path), *rest)])


def stack_last(word: str, *rest: str) -> list[str]:
    """The words after ``gpulease VERB``: the stack ``word`` then ``rest``, or ``rest``, ``--`` and the word when it
    begins with a dash (argparse reads ``-ab`` as an option; every word after ``--`` is an argument)."""
    if word.startswith("-"):
        return [*rest, "--", word]
    return [word, *rest]
