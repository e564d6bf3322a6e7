"""The stack a command is given on its command line (``gpulease status STACK``, ``plan STACK…``, ``plan --stack``,
``ephemeral up|run --base-stack`` and ``--stack-name``): an empty or blank one is a usage mistake, refused by the
parser before the command runs (an empty ``--stack-name`` is never replaced by the default name). The Pulumi CLI reads
``--stack ''`` as no stack given, that is the selected stack: ``gpulease ssh ''`` would reach another stack's
instance (docs/provider-facts.md, row 30)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

ACCEPTED = "a stack name in stacks/ or a Pulumi.<stack>.yaml file"


def stack_type(accepted: str = ACCEPTED) -> Callable[[str], str]:
    """The argparse ``type`` of a stack argument: the value as given, an empty or blank one refused in one line
    (``argument STACK: an empty stack name; accepted: ...``, exit 2)."""

    def stack(value: str) -> str:
        if not value.strip():
            raise argparse.ArgumentTypeError(f"an empty stack name; accepted: {accepted}")
        return value

    return stack


CHECK_ACCEPTED = f"{ACCEPTED}, or no argument to check this machine and the account only"
FOLDER_ACCEPTED = f"{ACCEPTED} or a project folder (`.` for this one)"
CI_ACCEPTED = "a ci-* stack name"
