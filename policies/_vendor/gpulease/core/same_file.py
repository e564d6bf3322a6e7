"""Whether a path names a file a command reads, under any name: the same path, a symlink to it (resolved), a hard
link to it (the same device and inode), a module of a program folder the command runs (under any name Python imports
it by, in any letter case), or a file every Python start reads (a site directory's ``.pth``, ``sitecustomize``). A
command never writes over its own inputs, whatever ``--force`` says."""

from __future__ import annotations

import importlib.machinery
import os
import re
import site
import sys
from collections.abc import Iterable
from pathlib import Path


def _same_file(a: Path, b: Path) -> bool:
    """One file under two names: a symlink (resolved) or a hard link (the same device and inode)."""
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _resolved(path: Path) -> Path:
    try:
        return path.expanduser().resolve()
    except (OSError, RuntimeError):  # a symlink loop: compared as written
        return path.absolute()


def input_problem(path: Path, reads: Iterable[Path] = (), sources: Iterable[Path] = ()) -> str | None:
    """Which input of the command ``path`` is (None: none): one of ``reads`` under any name (the same path, a
    symlink to it, a hard link to it), or a Python file inside one of ``sources`` (a program folder the command
    runs, whose modules it imports)."""
    target = _resolved(path)
    for read in reads:
        read = Path(read)
        if _same_file(path, read) or target == _resolved(read):
            return str(read)
    for folder in sources:
        if is_module_name(target.name) and target.is_relative_to(_resolved(Path(folder))):
            return f"a module of the program in {folder}"
        if (module := _linked_module(path, Path(folder))) is not None:
            return str(module)
    return None


MAX_WALKED = 20_000
"""The most entries looked at for a hard link into a program folder (a folder with more: its first ones)."""
SKIPPED_FOLDERS = frozenset({".venv", "venv", "node_modules", ".git", "__pycache__"})


def _linked_module(path: Path, folder: Path) -> Path | None:
    """The program's module ``path`` is a hard link to, looked for only when ``path`` has other links."""
    try:
        st = path.stat()
    except OSError:
        return None
    if st.st_nlink < 2:
        return None
    walked = 0
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in SKIPPED_FOLDERS]
        for name in files:
            walked += 1
            if walked > MAX_WALKED:
                return None
            if not is_module_name(name):
                continue
            candidate = Path(root) / name
            try:
                found = candidate.stat()
            except OSError:
                continue
            if (found.st_dev, found.st_ino) == (st.st_dev, st.st_ino):
                return candidate
    return None


PROGRAM_SUFFIXES = tuple(dict.fromkeys(s.lower() for s in (*importlib.machinery.all_suffixes(), ".pyi", ".pth")))
"""What a Python program's folder holds that the program reads when it runs (its modules): every name this Python
imports a module by (``importlib.machinery.all_suffixes()``: sources, bytecode and extension modules such as
``plan.abi3.so`` or ``plan.cpython-311-x86_64-linux-gnu.so``, which are found before ``plan.py``), stubs and ``.pth``
files."""
STARTUP_MODULES = ("sitecustomize", "usercustomize")
"""The modules ``site`` imports at every Python start, from the first ``sys.path`` entry that holds them."""


def is_module_name(name: str) -> bool:
    """Whether Python would import a file named ``name`` as a module (or read it as a ``.pth`` file). Letter case is
    ignored: on a case-insensitive file system (APFS, NTFS) ``plan.PY`` is ``plan.py``."""
    return name.lower().endswith(PROGRAM_SUFFIXES)


def _startup_folders() -> list[Path]:
    """The site directories and every ``sys.path`` folder: where a Python start looks for ``.pth`` files and
    ``sitecustomize``/``usercustomize``."""
    folders = [*getattr(site, "getsitepackages", list)(), site.getusersitepackages(), *sys.path]
    return [_resolved(Path(f or ".")) for f in folders if isinstance(f, str)]


def startup_problem(path: Path) -> str | None:
    """Why ``path`` must not be written (None: it may): a ``.pth`` file, ``sitecustomize`` or ``usercustomize``
    module in a site directory or a ``sys.path`` folder is read by every later Python start (a ``.pth`` line
    starting with ``import`` is run), this command's next run included."""
    target = _resolved(path)
    name = target.name.lower()
    startup = name.endswith(".pth") or any(name == m + s for m in STARTUP_MODULES for s in PROGRAM_SUFFIXES)
    if startup and target.parent in _startup_folders():
        return f"a file every Python start reads, in {target.parent}"
    return None


STACK_FILE = re.compile(r"^Pulumi\.[^/]+\.ya?ml\Z", re.IGNORECASE)


def stack_file_problem(target: Path, reads: tuple[Path, ...]) -> str | None:
    """Why ``target`` must not be written (None: it may): a ``Pulumi.<name>.yaml`` in the folder of the stack file
    or the project file this command reads would be a stack of the project (``plan .`` reviews it, ``up`` deploys
    it) that the project never wrote (an object pulled from a bucket, a report written with ``--output``)."""
    for place in (target, _resolved(target)):  # a (dangling) symlink writes where it resolves to
        if not STACK_FILE.match(place.name):
            continue
        here = place.parent.resolve()
        for read in reads:
            if Path(read).parent.resolve() == here:
                return f"would be a stack file in {Path(read).parent}, beside the ones this project deploys"
    return None
