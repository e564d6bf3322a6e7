"""A command the operator side runs and waits for (``pulumi version``, ``pulumi whoami``, ``pulumi stack output``),
bounded as a whole: the command and every process it started.

``subprocess.run(..., timeout=)`` kills only the child it started: a ``pulumi`` that hangs after starting a
process of its own (a plugin, a credential helper, a shell's background job) leaves that process running, holding
the pipes. Here the command starts in a new session, so it leads a process group of its own
(``start_new_session``: ``setsid()`` in the child, https://docs.python.org/3/library/subprocess.html#subprocess.Popen),
and on the deadline, or when the caller is interrupted, the whole group is killed (``os.killpg``). A process that
leaves the group itself (its own ``setsid()``) is out of reach, as for any supervisor that kills by group."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

REAP_SECONDS = 5.0
"""How long the group gets to go once killed (SIGKILL cannot be caught, so this is only the kernel's time)."""


def kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL to the command's whole process group, then reap the command (its pipes closed)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone already
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.communicate(timeout=REAP_SECONDS)


def run_bounded(argv: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None,
                cwd: str | Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with no input, its output captured as text, for at most ``timeout`` seconds in all. On the
    deadline the command's whole process group is killed and ``subprocess.TimeoutExpired`` raised; ``OSError``
    when it cannot be started."""
    proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(env) if env is not None else None, cwd=cwd, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:  # the deadline, or Ctrl-C in the caller: the group goes in both cases
        kill_group(proc)
        raise
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)
