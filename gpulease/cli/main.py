"""``gpulease``: the operator CLI. Each subcommand lives in ``gpulease/cli/<name>.py`` with a
``register(subparsers)`` function that adds its parser and sets ``func`` (returning the exit code).

Only the command being run is imported (by its name in ``COMMANDS``): ``gpulease plan`` never loads the
inventory's cloud SDKs, ``gpulease ls`` never loads Pulumi. The full list is built for ``--help`` and for a name
that is not a command."""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import sys
from collections.abc import Iterator

from gpulease.cli import conventions, stdout_guard
from gpulease.cli.conventions import EXIT_BAD_INPUT, EXIT_CODES_EPILOG, EXIT_FAILED
from gpulease.core.errors import UserError

COMMANDS = (
    "init", "check", "plan", "up", "down", "logs", "schema", "ls", "reap", "ephemeral", "size", "cost", "catalog",
    "push", "pull", "status", "ssh", "resume", "completion",
)
"""The subcommands, in the order ``--help`` lists them; each is the module ``gpulease.cli.<name>``."""


@contextlib.contextmanager
def imports_frozen() -> Iterator[None]:
    """Load a command's modules with the cyclic garbage collector off, then freeze what exists (``gc.freeze``).

    Importing creates hundreds of thousands of long-lived objects (classes, functions, the SDKs' type annotations)
    and almost no garbage, yet every 700 allocations start a collection of the young objects and, now and then, of
    all of them; and the interpreter's last collection at exit walks them all once more. Frozen objects are left
    out of every collection (reference counting still frees them), so that work goes: about a seventh of
    ``gpulease plan``'s time (``bench/plan_speed.py``). The command itself runs with the collector on as before."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with ``command`` alone when it is one of ``COMMANDS``, else with all of them."""
    parser = conventions.OneLineParser(
        prog="gpulease",
        description="Rent cloud GPUs for ML training: review, size, cost, run and sweep gpulease stacks.",
        epilog=EXIT_CODES_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {conventions.version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in (command,) if command in COMMANDS else COMMANDS:
        importlib.import_module(f"gpulease.cli.{name}").register(sub)
    conventions.apply(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: this process's own). Called with ``argv`` from a longer-lived
    process (the tests), the objects frozen while the command's modules loaded are unfrozen on return; run as the
    process's command they stay frozen to its exit (``imports_frozen``)."""
    whole_process = argv is None
    if whole_process:
        stdout_guard.install()  # a closed pipe or a full disk on stdout ends well (``stdout_guard``)
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:
        return _usage_mistake(argv, conventions.unknown_command(argv[0], COMMANDS))
    if argv and argv[0].startswith("-"):
        from gpulease.cli.option_place import misplaced

        with imports_frozen():
            line = misplaced(argv, COMMANDS, build_parser)
        if line is not None:
            return _usage_mistake(argv, line)
    try:
        with imports_frozen():
            parser = build_parser(argv[0] if argv else None)
        return _run(parser, argv)
    finally:
        if not whole_process:
            gc.unfreeze()


def _usage_mistake(argv: list[str], line: str) -> int:
    """One line on stderr (and, when JSON is asked for, the envelope on stdout), exit 2."""
    if conventions.json_asked(argv):
        conventions.print_json("usage", None, ok=False, errors=[conventions.error_entry(conventions.BAD_INPUT, line)])
    print(f"gpulease: {line}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    """The command's exit code. Standard output (guarded when this is the process's command, ``stdout_guard``) is
    flushed before it returns, also after ``--help``/``--version`` or a usage error: a closed pipe leaves the code
    as it is, a write error (a full disk) is one line on stderr and exit 1."""
    try:
        try:
            return _command(parser, argv)
        finally:
            stdout_guard.finish()
    except stdout_guard.OutputWriteError as exc:
        print(f"gpulease: {exc.line()}", file=sys.stderr)
        return EXIT_FAILED


def _command(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    conventions.OneLineParser.argv = list(argv)  # every (sub)command's parser: which command, JSON or not
    args = parser.parse_args(argv)
    conventions.normalise(args)
    try:
        with conventions.quiet_sdk_loggers():
            return int(args.func(args) or 0)
    except UserError as exc:
        return _refuse(args, str(exc))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        # A missing credential or a value the cloud SDK refuses before any call is the user's to fix: one line.
        if (message := conventions.sdk_input_problem(exc)) is None:
            raise
        return _refuse(args, message)


def _refuse(args: argparse.Namespace, message: str) -> int:
    # One line, whatever the error's own layout (a spec error lists its problems one per line): a CI log or a
    # wrapper script reads the last line of stderr. A JSON caller also gets the envelope on stdout.
    line = conventions.one_line(message)
    print(f"gpulease: {line}", file=sys.stderr)
    if getattr(args, "format", None) == "json":
        conventions.print_json(conventions.command_name(args), None, ok=False,
                               errors=[conventions.error_entry(conventions.BAD_INPUT, line)])
    return EXIT_BAD_INPUT
