"""A real interactive zsh in a detached tmux session, with ``gpulease completion zsh`` loaded: what a user gets from
``eval "$(gpulease completion zsh)"`` in ``~/.zshrc``. Used by the completion tests."""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.programs import required

PROMPT = "ready>"


class ZshSession:
    def __init__(self, tmux: str, name: str) -> None:
        self.tmux, self.name = tmux, name

    def pane(self) -> str:
        return subprocess.run([self.tmux, "capture-pane", "-p", "-t", self.name], capture_output=True, text=True,
                              timeout=30, check=True).stdout

    def until(self, wanted: str, timeout: float = 20.0) -> str:
        """The pane once it shows ``wanted`` (or as it is after ``timeout`` seconds)."""
        end = time.monotonic() + timeout
        text = self.pane()
        while wanted not in text and time.monotonic() < end:
            time.sleep(0.2)
            text = self.pane()
        return text

    def tab(self, typed: str, wanted: str) -> str:
        """A new line ``typed``, then TAB; the pane once it shows ``wanted``."""
        subprocess.run([self.tmux, "send-keys", "-t", self.name, "C-u", typed, "Tab"], check=True, timeout=30)
        return self.until(wanted)


@contextmanager
def zsh_with_completion(home: Path, bin_dir: Path, cwd: Path, env_lines: str = "") -> Iterator[ZshSession]:
    """zsh started in ``cwd`` with ``bin_dir`` first on PATH (its ``gpulease`` writes the script), ``home`` as its
    ZDOTDIR; ended with the test."""
    zsh, tmux = required("zsh"), required("tmux")
    script = subprocess.run([str(bin_dir / "gpulease"), "completion", "zsh"], capture_output=True, text=True,
                            timeout=60, check=True).stdout
    (home / "gpulease.zsh").write_text(script)
    (home / ".zshrc").write_text(
        f"PS1='{PROMPT} '\nautoload -U compinit && compinit -u\n"
        f"export PATH={shlex.quote(str(bin_dir))}:$PATH\n{env_lines}"
        f'eval "$(cat {shlex.quote(str(home / "gpulease.zsh"))})"\n'
        f"cd {shlex.quote(str(cwd))}\n")
    name = f"gpulease-zsh-{os.getpid()}-{time.monotonic_ns()}"
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "COLUMNS", "LINES")}
    # -e: a tmux server already running (another test's) gives new sessions its own environment, not this one's.
    subprocess.run([tmux, "new-session", "-d", "-s", name, "-x", "120", "-y", "30", "-e", f"ZDOTDIR={home}", zsh, "-i"],
                   env=env, check=True, timeout=30)
    session = ZshSession(tmux, name)
    try:
        assert PROMPT in session.until(PROMPT)
        yield session
    finally:
        subprocess.run([tmux, "kill-session", "-t", name], capture_output=True, timeout=30, check=False)
