"""zsh completion in a real interactive zsh (in tmux), as a user gets it from ``eval "$(gpulease completion zsh)"``:
commands, an option's fixed choices, a subcommand and the stack names (which run ``gpulease completion stacks``
from inside the completion function). ``make setup`` installs zsh and tmux."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from tests.support.paths import ROOT
from tests.support.programs import required

ZSH = required("zsh")
TMUX = required("tmux")


def _pane(name: str) -> str:
    return subprocess.run([TMUX, "capture-pane", "-p", "-t", name], capture_output=True, text=True, timeout=30,
                          check=True).stdout


def _until(name: str, wanted: str, timeout: float = 20.0) -> str:
    end = time.monotonic() + timeout
    text = _pane(name)
    while wanted not in text and time.monotonic() < end:
        time.sleep(0.2)
        text = _pane(name)
    return text


def test_zsh_completes_commands_choices_and_stack_names(tmp_path: Path) -> None:
    script = subprocess.run([sys.executable, "-m", "gpulease", "completion", "zsh"], capture_output=True, text=True,
                            timeout=60, check=True, cwd=ROOT).stdout
    (tmp_path / "gpulease.zsh").write_text(script)
    bin_dir = tmp_path / "bin"  # `gpulease` on PATH: this Python running this tree's package
    bin_dir.mkdir()
    (bin_dir / "gpulease").write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m gpulease \"$@\"\n")
    (bin_dir / "gpulease").chmod(0o755)
    (tmp_path / ".zshrc").write_text(
        "PS1='ready> '\nautoload -U compinit && compinit -u\n"
        f"export PATH={shlex.quote(str(bin_dir))}:$PATH\n"
        f"export PYTHONPATH={shlex.quote(str(ROOT))}\n"
        f'eval "$(cat {shlex.quote(str(tmp_path / "gpulease.zsh"))})"\n'
        f"cd {shlex.quote(str(ROOT))}\n")
    name = f"gpulease-zsh-{os.getpid()}"
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "COLUMNS", "LINES")}
    # -e: a tmux server already running (another test's) gives new sessions its own environment, not this one's.
    subprocess.run([TMUX, "new-session", "-d", "-s", name, "-x", "120", "-y", "30", "-e", f"ZDOTDIR={tmp_path}",
                    ZSH, "-i"], env=env, check=True, timeout=30)
    try:
        assert "ready>" in _until(name, "ready>")

        def complete(typed: str, wanted: str) -> str:
            subprocess.run([TMUX, "send-keys", "-t", name, "C-u", typed, "Tab"], check=True, timeout=30)
            return _until(name, wanted)

        assert "ready> gpulease plan" in complete("gpulease pl", "ready> gpulease plan")
        text = complete("gpulease plan --format ", "markdown")
        assert "json" in text and "markdown" in text and "text" in text
        assert "ready> gpulease catalog refresh" in complete("gpulease catalog re", "ready> gpulease catalog refresh")
        # A stack name comes from `gpulease completion stacks`, run by the completion function itself.
        assert "ready> gpulease plan aws-lora-7b" in complete("gpulease plan aws-lor", "ready> gpulease plan aws-lora-7b")
    finally:
        subprocess.run([TMUX, "kill-session", "-t", name], capture_output=True, timeout=30, check=False)
