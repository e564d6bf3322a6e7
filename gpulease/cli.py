"""``gpulease``: the operator CLI. Each subcommand lives in ``gpulease/commands/<name>.py`` with a
``register(subparsers)`` function that adds its parser and sets ``func`` (returning the exit code)."""

from __future__ import annotations

import argparse
import importlib
import sys

from gpulease.core.errors import UserError

COMMANDS = [
    "gpulease.commands.plan",
    "gpulease.commands.schema",
    "gpulease.commands.ls",
    "gpulease.commands.reap",
    "gpulease.commands.ephemeral",
    "gpulease.commands.size",
    "gpulease.commands.cost",
    "gpulease.commands.catalog",
]

EXIT_OK = 0
EXIT_VIOLATIONS = 1
EXIT_BAD_INPUT = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpulease",
        description="Rent cloud GPUs for ML training: review, size, cost, run and sweep gpulease stacks.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        # One line, whatever the error's own layout (a spec error lists its problems one per line): a CI log
        # or a wrapper script reads the last line of stderr.
        print(f"gpulease: {' '.join(line.strip() for line in str(exc).splitlines() if line.strip())}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
