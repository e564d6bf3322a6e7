"""Every process a command started, and ending them all (standard library only).

A process group kill misses a daemon that called ``setsid`` (a new session, a new group) and whose parent exited
(it is re-parented to init). So each command is started with a token in its environment
(``GPULEASE_RUN_TOKEN``, inherited by everything it starts) and this process becomes a child subreaper
(``prctl(PR_SET_CHILD_SUBREAPER)``, Linux 3.4+: orphaned descendants are re-parented to it, not to init); ending a
command ends its process group, every descendant of its process (by parent id in ``/proc``), and every process
whose environment carries its token, until none is left or the bound passes. A daemon that clears its environment
and is not our descendant cannot be found this way: a cgroup (``systemd-run --scope``) would; the tools run under
systemd units whose ``KillMode`` ends what remains when the unit stops."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
import uuid

try:
    from instance import bounds
except ImportError:  # on the instance: installed next to this file
    import bounds  # type: ignore[no-redef]

TOKEN_VARIABLE = "GPULEASE_RUN_TOKEN"
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Orphaned descendants come to this process instead of init (Linux); False where that is not available."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def new_token() -> str:
    return uuid.uuid4().hex


def _parents(proc_root: str) -> dict[int, int]:
    found = {}
    try:
        names = os.listdir(proc_root)
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc_root, name, "stat"), encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            found[int(name)] = int(text[text.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return found


def _has_token(pid: int, token: str, proc_root: str) -> bool:
    try:
        with open(os.path.join(proc_root, str(pid), "environ"), "rb") as fh:
            return f"{TOKEN_VARIABLE}={token}".encode() in fh.read().split(b"\0")
    except OSError:
        return False


def members(root_pid: int, token: str | None, proc_root: str = "/proc") -> set[int]:
    """The processes that belong to the command started as ``root_pid`` (with ``token``), not counting this one."""
    parents = _parents(proc_root)
    ours = {root_pid} if root_pid in parents else set()
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in ours and pid not in ours:
                ours.add(pid)
                grew = True
    if token:
        ours |= {pid for pid in parents if pid not in ours and _has_token(pid, token, proc_root)}
    ours.discard(os.getpid())
    return ours


def end_all(root_pid: int, token: str | None, bound: float = 5.0, proc_root: str = "/proc") -> set[int]:
    """SIGKILL the command's group and every member until none is left (at most ``bound`` seconds); what was
    still there at the end (empty when all ended)."""
    with contextlib.suppress(OSError):
        os.killpg(root_pid, signal.SIGKILL)
    end = time.monotonic() + bound
    left = members(root_pid, token, proc_root)
    while left:
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        _reap(left)
        if time.monotonic() >= end:
            break
        time.sleep(bounds.value("process_poll"))
        left = {pid for pid in members(root_pid, token, proc_root) if not _zombie(pid, proc_root)}
    return left


def _zombie(pid: int, proc_root: str) -> bool:
    try:
        with open(os.path.join(proc_root, str(pid), "stat"), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        return text[text.rindex(")") + 2:].split()[0] in ("Z", "X")
    except (OSError, ValueError, IndexError):
        return True


def _reap(pids: set[int]) -> None:
    """Collect the exit status of those of ``pids`` re-parented here (as a subreaper), so they do not linger as
    zombies; only these (another child's status belongs to whoever started it)."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
