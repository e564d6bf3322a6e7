"""Where a command may write its report (``--output FILE``): never over a file the command reads, never over an
existing file that is not one of gpulease's own reports unless ``--force`` says so, and only in a folder that
exists. Checked before any work, so a refusal costs nothing (one line, exit 2)."""

from __future__ import annotations

import argparse
import errno
import os
import re
from collections.abc import Iterable
from pathlib import Path

from components.spec.text import hidden_character
from gpulease.core.errors import UserError
from gpulease.core.printable import printable
from gpulease.core.same_file import input_problem, stack_file_problem, startup_problem

REPORT_HEADER = re.compile(
    r"<!-- gpulease-plan -->\n"  # the markdown report (the pull-request comment's marker)
    r"|gpulease-report: [a-z]+(?: [a-z]+)?\n"  # the text report's first line (report_marker)
    r'|\{\n  "report": "gpulease [a-z]+(?: [a-z]+)?",'  # the JSON envelope's first key
    r"|# Written by `gpulease catalog refresh`"  # the price file's header
)
"""How every report a command writes to a file STARTS (its own first line): only a file that starts so may be
written over. A marker quoted further down (a workflow that posts the comment, a doc) does not make a file ours."""
MARKER_SCAN_BYTES = 4096
FORCE_OPTION = "--force"


class OutputPathError(UserError):
    """``--output`` names a place the report cannot (or must not) be written."""


def os_reason(exc: OSError) -> str:
    """What the system said, with its code: ``File name too long (ENAMETOOLONG)``."""
    code = errno.errorcode.get(exc.errno or 0)
    return f"{exc.strerror or exc}{f' ({code})' if code else ''}"


def add_force_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(FORCE_OPTION, action="store_true",
                   help="write --output over an existing file that is not a gpulease report (never over an input)")


def report_marker(kind: str) -> str:
    """The marker line a text or JSON report written to a file starts with."""
    return f"gpulease-report: {kind}"


def is_own_report(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            head = f.read(MARKER_SCAN_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return False
    return REPORT_HEADER.match(head) is not None


def refuse_inputs(path: Path, reads: Iterable[Path] = (), *, sources: Iterable[Path] = (), option: str = "--output",
                  accepted: str = "a new file in an existing folder") -> None:
    """Refuse (one line, exit 2) writing ``path`` when it is a file the command reads, whatever ``--force`` says."""
    found = input_problem(path, reads, sources) or startup_problem(path)
    if found is not None:
        raise OutputPathError(f"{option} {path}: is a file this command reads ({found}); it is never written "
                              f"over, even with {FORCE_OPTION}; accepted: {accepted}")


def check_output(path: Path, *, reads: Iterable[Path] = (), force: bool = False, option: str = "--output",
                 sources: Iterable[Path] = ()) -> None:
    """Refuse ``path`` (one line, exit 2) when the report cannot or must not go there."""
    accepted = "a new file (or an earlier gpulease report) in an existing folder, e.g. plan.md"
    reads = tuple(reads)
    refuse_hidden(path, option, accepted)
    if path.is_dir():
        raise OutputPathError(f"{option} {path}: is a folder; accepted: {accepted}")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise OutputPathError(f"{option} {path}: the folder {parent} does not exist; accepted: {accepted}")
    refuse_inputs(path, reads, sources=sources, option=option, accepted=accepted)
    if problem := stack_file_problem(path, reads):
        raise OutputPathError(f"{option} {path}: {problem}; accepted: {accepted}, named other than Pulumi.<name>.yaml "
                              "or in another folder")
    if path.exists() and not path.is_file():
        raise OutputPathError(f"{option} {path}: is not a regular file; accepted: {accepted}")
    if path.exists() and not force and not is_own_report(path):
        raise OutputPathError(f"{option} {path}: exists and is not a gpulease report; accepted: {accepted}, or "
                              f"{FORCE_OPTION} to replace it")


def refuse_hidden(path: Path, option: str, accepted: str) -> None:
    """Refuse (one line, exit 2) a path the command writes that holds a character not shown as itself: not UTF-8
    (``\\xff``, decoded as a surrogate), a control, format (U+202E) or invisible one: the file written would not be
    the one its name reads as."""
    why = hidden_character(os.fspath(path))
    if why:
        shown = printable(os.fsencode(path).decode("utf-8", "backslashreplace"))  # \xff as itself, not a surrogate
        raise OutputPathError(f"{option} {shown}: {why}; accepted: {accepted}, named in printable UTF-8 characters")


def _resolved(path: Path) -> Path:
    try:
        return path.expanduser().resolve()
    except (OSError, RuntimeError):  # a symlink loop: compared as written
        return path.absolute()


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def refuse_input_folder(folder: Path, reads: Iterable[Path] = (), *, within: Iterable[Path] = (),
                        option: str = "--artifacts-dir") -> None:
    """Refuse (one line, exit 2) a folder a command writes files into when it is one of ``reads`` (or a link to
    one), holds one of them (``.`` holding Pulumi.yaml), or lies inside one of ``within`` (the stack files' folder),
    before anything is created: what it writes there would replace or sit among the command's inputs."""
    accepted = "a folder outside the stack files' folder that holds none of the command's inputs, e.g. artifacts"
    refuse_hidden(folder, option, accepted)
    target = _resolved(folder)
    for read in (Path(r) for r in reads):
        found = input_problem(folder, [read])
        if found is None and os.path.lexists(read) and _inside(_resolved(read), target):
            found = f"it holds {read}"
        if found is not None:
            raise OutputPathError(f"{option} {folder}: the files it receives would land among this command's "
                                  f"inputs ({found}); accepted: {accepted}")
    for inner in (Path(w) for w in within):
        if _inside(target, _resolved(inner)):
            raise OutputPathError(f"{option} {folder}: is inside {inner}, which holds this command's inputs; "
                                  f"accepted: {accepted}")
