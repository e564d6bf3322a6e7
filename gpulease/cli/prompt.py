"""How a command asks on a terminal: the question on stderr and the answer from stdin, so that stdout carries
only the command's result (``gpulease init --json | jq`` stays JSON while it asks)."""

from __future__ import annotations

import sys

from gpulease.core.errors import UserError

MAX_ANSWER_CHARS = 4096
"""An answer is a name, an address or a number: a longer line is not one."""


class NoAnswerError(UserError):
    """The terminal closed (Ctrl-D) before an answer was given."""


def ask(question: str) -> str:
    """``question`` on stderr, then one line from stdin without its line end."""
    sys.stderr.write(question)
    sys.stderr.flush()
    line = sys.stdin.readline(MAX_ANSWER_CHARS + 1)
    if not line:
        raise NoAnswerError(f"{question.strip().rstrip(':')}: no answer (end of input); nothing was changed")
    if len(line.rstrip("\n")) > MAX_ANSWER_CHARS:
        raise NoAnswerError(f"{question.strip().rstrip(':')}: the answer is longer than {MAX_ANSWER_CHARS} characters")
    return line.rstrip("\r\n")
