"""The processes the watchdog reads from ``/proc``: command lines, launchers (torchrun, a shell), liveness."""

from __future__ import annotations

import os


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def _processes(proc_root: str) -> list[tuple[int, str]]:
    out = []
    try:
        names = os.listdir(proc_root)
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc_root, name, "cmdline"), "rb") as fh:
                raw = fh.read()
        except OSError:
            continue
        if raw:
            out.append((int(name), raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()))
    return out


SHELLS = ("sh", "bash", "dash", "zsh")
"""A shell whose ``-c`` command names the script is a wrapper, not the training process (SIGUSR1 ends it)."""
LAUNCHER_NAMES = ("torchrun",)
LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch")
"""torchrun and its module forms: the elastic agent that starts the training processes (its argv names the script
too, so a substring match reaches it)."""


def _argv(proc_root: str, pid: int) -> list[str]:
    try:
        with open(os.path.join(proc_root, str(pid), "cmdline"), "rb") as fh:
            raw = fh.read(64 * 1024)
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def _launcher(argv: list[str]) -> bool:
    """Whether ``argv`` is torchrun's agent (``torchrun …``, ``python …/torchrun …``, ``python -m
    torch.distributed.run …``, options before ``-m`` allowed) or a shell wrapping the command."""
    if not argv:
        return False
    if os.path.basename(argv[0]) in LAUNCHER_NAMES + SHELLS:
        return True
    if not os.path.basename(argv[0]).startswith("python"):
        return False
    words = iter(argv[1:])
    for word in words:
        if word in ("-X", "-W"):  # options that take a value
            next(words, None)
        elif word == "-m":
            return next(words, None) in LAUNCHER_MODULES
        elif word.startswith("-m"):
            return word[2:] in LAUNCHER_MODULES
        elif word == "-c":
            return False
        elif not word.startswith("-"):
            return os.path.basename(word) in LAUNCHER_NAMES
    return False


def _cmdlines(proc_root: str) -> list[str]:
    return [cmd for _, cmd in _processes(proc_root)]


def _alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)  # reaps a child of ours (tests); others raise ChildProcessError
        if waited == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
