"""``gpulease down STACK``: destroy the stack, then say exactly what stays (disk, bucket, baked images) and what it
costs per month; ``--all`` removes the disk and the bucket too, after confirmation or ``--yes``
(``gpulease/lifecycle/teardown.py``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from gpulease.cli.conventions import EXIT_INCOMPLETE
from gpulease.cli.envelope import (
    EXIT_FAILED,
    EXIT_OK,
    add_parser,
    call_failed,
    envelope,
    error,
    guarded,
    print_json,
)
from gpulease.cli.prompt import ask
from gpulease.cli.stack_arg import stack_type
from gpulease.core.errors import UserError
from gpulease.core.money import usd_per_month
from gpulease.review.stack_commands import command

CONFIRM: Callable[[str], str] = ask
"""How ``--all`` asks on a terminal (a test replaces it)."""


class NotConfirmedError(UserError):
    """``--all`` without a terminal to ask on and without ``--yes``, or a confirmation not given."""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_parser(
        sub, "down", help="destroy a stack and say what stays and what it costs; --all removes the disk and bucket",
        description="Destroy the stack's instance and everything it does not retain, then list what stays (the data "
        "disk, the checkpoint bucket, baked images) with its monthly cost. --all removes the disk and the bucket too "
        "(only those the stack created and tags as its own), after you type the stack's name, or with --yes.",
        codes=((EXIT_OK, "destroyed (and with --all, removed)"), (EXIT_FAILED, "the destroy or a removal failed "
               "before anything was deleted, or was refused"),
               (EXIT_INCOMPLETE, "partly torn down: pulumi destroy (or --all) stopped part-way; what is gone and "
                "what is left, with its monthly cost")))
    p.add_argument("stack", type=stack_type())
    p.add_argument("--all", dest="remove_all", action="store_true", help="also remove the data disk and the bucket")
    p.add_argument("--yes", action="store_true", help="do not ask before --all removes (needed without a terminal)")
    p.set_defaults(func=guarded(cmd_down))


def confirm(stack: str, yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise NotConfirmedError(f"down --all {stack}: removes the data disk and the bucket with every checkpoint; "
                                "no terminal to confirm on: accepted: --yes")
    answer = CONFIRM(f"This removes {stack}'s data disk and checkpoint bucket for good. Type the stack name: ")
    if answer.strip() != stack:
        raise NotConfirmedError(f"down --all {stack}: not confirmed (typed {answer.strip()!r}); nothing was changed")


def cmd_down(args: argparse.Namespace) -> int:
    from gpulease.ephemeral.backend import OutputsUnreadableError
    from gpulease.ephemeral.progress import make_progress
    from gpulease.lifecycle.teardown import PartialTeardownError, TeardownError, down

    if args.remove_all:
        confirm(args.stack, args.yes)
    progress = make_progress(True)  # progress on stderr: stdout carries only the answer
    try:
        result = down(args.stack, progress, remove_all=args.remove_all)
    except PartialTeardownError as exc:
        return partly_down(args, exc)
    except (TeardownError, OutputsUnreadableError) as exc:
        return call_failed(args, "down", "teardown-failed", exc)
    finally:
        progress.close()
    if args.json:
        print_json(envelope("down", result.as_dict()))
        return EXIT_OK
    print(f"{args.stack}: destroyed")
    for item in result.removed:
        print(f"removed: {item}")
    for item in result.kept:
        print(f"kept: {item}")
    if result.stays:
        print("what stays:")
        for s in result.stays:
            cost = usd_per_month(s['monthlyUsd']) if s.get("monthlyUsd") is not None else s.get("note", "")
            print(f"  {s['resource']} ({s['item']}): {cost}")
        again = command("down", result.stack, result.path, "--all")
        print(f"  in all about {usd_per_month(result.monthly_usd)} until removed ({again})")
    else:
        print("nothing stays")
    for removal in result.commands:
        print(f"to remove on Alibaba Cloud: {removal}")
    return EXIT_OK


def _month(value: float | None) -> str:
    return usd_per_month(value, "price unknown")


def partly_down(args: argparse.Namespace, exc: Any) -> int:
    """A teardown that stopped part-way: what is gone, what is left and what that costs a month; exit 3. Nothing is
    said to be destroyed or removed that was not."""
    from gpulease.cli.envelope import one_line
    from gpulease.cli.printable import printable

    result = exc.result
    print(f"gpulease: {printable(one_line(exc))}", file=sys.stderr)
    if args.json:
        print_json(envelope("down", result.as_dict(), [error("teardown-partial", one_line(exc))]))
        return EXIT_INCOMPLETE
    what = "pulumi destroy failed part-way; the stack is partly destroyed" if not result.destroyed else \
        "destroyed, but --all stopped part-way"
    print(f"{args.stack}: {what}")
    for name in result.gone:
        print(f"gone: {name}")
    if result.left:
        print("left:")
        for line in result.left:
            kept = " (retained)" if line.get("retained") else ""
            print(f"  {line['resource']} ({line['item']}): {_month(line.get('monthlyUsd'))}{kept}")
        total = "unknown" if result.left_monthly_usd is None else f"about {usd_per_month(result.left_monthly_usd)}"
        again = command("down", result.stack, result.path, *(["--all"] if result.destroyed else []))
        print(f"  in all {total} while it is left ({again})")
    for note in result.notes:
        print(f"note: {note}")
    return EXIT_INCOMPLETE
