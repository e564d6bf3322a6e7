"""What the journey commands (init, check, up, down, logs) share: the JSON envelope every ``--json`` output has
(``gpulease.cli.conventions``: ``{"report": "gpulease <command>", "ok", "data", "errors": [{"code", "message"}]}``,
camelCase keys, kebab-case error codes, a user mistake the code ``bad-input``), and the exit-code epilog their
``--help`` shows."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from gpulease.cli import conventions
from gpulease.cli.conventions import BAD_INPUT, EXIT_BAD_INPUT, EXIT_CODES_EPILOG, EXIT_FAILED, EXIT_OK
from gpulease.core.errors import UserError
from gpulease.core.flag_numbers import number

__all__ = ["BAD_INPUT", "EXIT_BAD_INPUT", "EXIT_FAILED", "EXIT_OK"]


def envelope(command: str, data: Any, errors: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """The one envelope; ``ok`` is true exactly when ``errors`` is empty."""
    errors = list(errors or [])
    return conventions.envelope(command, data, ok=not errors, errors=errors)


def error(code: str, message: str) -> dict[str, str]:
    return conventions.error_entry(conventions.check_code(code), message)


def one_line(exc: BaseException) -> str:
    return conventions.one_line(str(exc))


def print_json(doc: dict[str, Any]) -> None:
    sys.stdout.write(conventions.dumps(doc))


def call_failed(args: argparse.Namespace, command: str, code: str, exc: BaseException) -> int:
    """A call the command made failed: the envelope on stdout with ``--json``, always one line on stderr (control
    characters made visible), exit 1."""
    from gpulease.cli.printable import printable

    if getattr(args, "json", False):
        print_json(envelope(command, None, [error(code, one_line(exc))]))
    print(f"gpulease: {printable(one_line(exc))}", file=sys.stderr)
    return EXIT_FAILED


minutes = number("a number of minutes in (0, 1440]", 0, 24 * 60, above=True, example="30")
"""An argparse type: a number of minutes in (0, 1440] (``--wait``, ``--minutes``)."""


def exit_epilog(*codes: tuple[int | str, str]) -> str:
    """This command's own exit codes (a code or a range, e.g. ``1-255`` for a remote command's own), then the ones
    every command shares."""
    rows = codes or ((EXIT_OK, "done"),)
    lines = [f"  {code}  {what}" for code, what in rows]
    own = "exit codes of this command:\n" + "\n".join(
        [*lines, f"  {EXIT_BAD_INPUT}  a user mistake (one line on stderr, nothing changed)"])
    return f"{own}\n\n{EXIT_CODES_EPILOG}"


def add_parser(sub: argparse._SubParsersAction, name: str, *, help: str, description: str,
               codes: tuple[tuple[int | str, str], ...], usage: str | None = None) -> argparse.ArgumentParser:
    """A subcommand parser whose ``--help`` ends with its exit codes; ``--json`` is added for every command."""
    p = sub.add_parser(name, help=help, description=description, usage=usage, epilog=exit_epilog(*codes),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true",
                   help='print the envelope {"report", "ok", "data", "errors"} as JSON on stdout')
    return p


def guarded(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """With ``--json``, a user mistake is the envelope on stdout (and the line on stderr), exit 2; without, the
    error goes to the CLI's own one-line handler."""

    def run(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except UserError as exc:
            if not getattr(args, "json", False):
                raise
            print_json(envelope(conventions.command_name(args), None, [error(getattr(exc, "code", BAD_INPUT), one_line(exc))]))
            print(f"gpulease: {one_line(exc)}", file=sys.stderr)
            return EXIT_BAD_INPUT

    return run
