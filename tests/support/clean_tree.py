"""The suite leaves the checkout as it found it: every test writes under a temporary folder, never into the
repository (a file a test leaves at the top level ends up committed by the next ``git add -A``).

Compared once for the whole run, in the process that started it (with pytest-xdist, the controller, after every
worker has finished): ``git status --porcelain`` before and after, each path it names with a stamp of what it holds
(a file's size and modification time; a folder's, every file's under it), so that a test writing into a folder that
was already there (``artifacts/`` left by an earlier run) or rewriting a file already changed is seen too. Skipped
outside a git checkout."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_BEFORE = pytest.StashKey[frozenset[str]]()
_TOOL_CACHE = re.compile(
    r"(^|/)(__pycache__|\.pytest_cache|\.ruff_cache|\.hypothesis|\.import_linter_cache|\.venv|venv|build|[^/]*\.egg-info)(/|$)"
    r"|\.pyc$"
)


def tree_status(root: Path = ROOT) -> frozenset[str] | None:
    """The lines of ``git status --porcelain`` (a new folder as one line), or None without git."""
    git = shutil.which("git")
    if not git or not (root / ".git").exists():
        return None
    try:
        # Ignored files count too (``artifacts/`` is ignored so that a CI run's download is never committed, yet a
        # test must not write it either); only the caches that tools make are left out.
        done = subprocess.run([git, "-C", str(root), "status", "--porcelain", "--ignored", "--untracked-files=normal"],
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return frozenset(f"{line} [{stamp(root, line)}]" for line in done.stdout.splitlines() if not tool_cache(line))


STAMP_MAX_FILES = 10_000
"""The most files a folder's stamp reads the metadata of (a folder that large is named as such)."""


def stamp(root: Path, line: str) -> str:
    """What the path of a ``git status --porcelain`` line holds now: a digest of the size and modification time of
    the file, or of every file under the folder (tool caches left out); ``gone`` when it is not there."""
    name = line[3:].split(" -> ")[-1].strip('"')
    path = root / name
    if not os.path.lexists(path):
        return "gone"
    digest = hashlib.sha256()
    if not path.is_dir() or path.is_symlink():
        info = path.lstat()
        digest.update(f"{info.st_size}:{info.st_mtime_ns}".encode())
        return digest.hexdigest()[:16]
    count = 0
    for folder, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not _TOOL_CACHE.search(f"{d}/"))
        for file in sorted(files):
            count += 1
            if count > STAMP_MAX_FILES:
                return f"more than {STAMP_MAX_FILES} files"
            full = Path(folder, file)
            try:
                info = full.lstat()
            except OSError:
                continue
            digest.update(f"{full.relative_to(path)}:{info.st_size}:{info.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def tool_cache(line: str) -> bool:
    """A ``git status --porcelain`` line (``XY path``) naming a cache a tool makes."""
    return bool(_TOOL_CACHE.search(line[3:]))


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    if _is_worker(session.config):
        return
    status = tree_status()
    if status is not None:
        session.config.stash[_BEFORE] = status


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _is_worker(session.config) or _BEFORE not in session.config.stash:
        return
    after = tree_status()
    if after is None:
        return
    gained = sorted(after - session.config.stash[_BEFORE])
    if gained:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = "the suite changed the checkout (tests must write under tmp_path): " + "; ".join(gained)
        if reporter is not None:
            reporter.write_line(message, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
