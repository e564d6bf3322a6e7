"""Completion never runs or splits a stack file's name: a stack file named ``Pulumi.$(touch PWNED).yaml`` (or with
backquotes, a space, a quote) pressed TAB on in a real bash and a real zsh (in tmux) creates no file, and the plain
stack names still complete. ``gpulease completion stacks`` offers only plain names."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.support.paths import ROOT
from tests.support.programs import required

HOSTILE = ("$(touch PWNED1)", "`touch PWNED2`", "a b", "it's")


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "here"
    (project / "stacks").mkdir(parents=True)
    for name in ("aws-mine", *HOSTILE):
        shutil.copy(ROOT / "stacks" / "Pulumi.aws-lora-7b.yaml", project / "stacks" / f"Pulumi.{name}.yaml")
    return project


def _bin(tmp_path: Path, lines: str | None = None) -> Path:
    """``gpulease`` on PATH: this tree's package; with ``lines``, a stand-in whose ``completion stacks`` prints them
    (the script itself must hold against whatever it is fed)."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    real = f'PYTHONPATH={shlex.quote(str(ROOT))} exec {shlex.quote(sys.executable)} -m gpulease "$@"'
    body = real if lines is None else (
        f'if [ "$1 $2" = "completion stacks" ]; then printf %s {shlex.quote(lines)}; exit 0; fi\n{real}')
    (bindir / "gpulease").write_text(f"#!/bin/sh\n{body}\n")
    (bindir / "gpulease").chmod(0o755)
    return bindir


def _bash_reply(tmp_path: Path, bindir: Path, cwd: Path, cur: str) -> list[str]:
    bash = required("bash")
    script = subprocess.run([str(bindir / "gpulease"), "completion", "bash"], capture_output=True, text=True,
                            check=True, timeout=60).stdout
    drive = (script + f'\nCOMP_WORDS=(gpulease plan {shlex.quote(cur)}); COMP_CWORD=2; _gpulease; '
             'printf "%s\\n" "${COMPREPLY[@]}"\n')
    env = {**os.environ, "PATH": f"{bindir}:/usr/bin:/bin"}
    done = subprocess.run([bash, "--norc", "--noprofile", "-c", drive], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)
    return done.stdout.splitlines()


def _no_file_made(tmp_path: Path) -> None:
    made = sorted(p.name for p in tmp_path.rglob("PWNED*"))
    assert not made, f"TAB ran a command written in a stack file name: {made}"


def test_completion_stacks_offers_only_plain_names(tmp_path):
    project = _project(tmp_path)
    done = subprocess.run([str(_bin(tmp_path) / "gpulease"), "completion", "stacks"], cwd=project, capture_output=True,
                          text=True, check=True, timeout=60)
    names = done.stdout.splitlines()
    assert "aws-mine" in names
    assert not [n for n in names if n.startswith(HOSTILE)], names


def test_bash_tab_never_runs_a_stack_name(tmp_path):
    project = _project(tmp_path)
    reply = _bash_reply(tmp_path, _bin(tmp_path), project / "stacks", "")
    _no_file_made(tmp_path)
    assert "aws-mine" in reply and "aws-lora-7b" in reply


def test_bash_script_takes_each_line_as_one_word_never_code(tmp_path):
    bindir = _bin(tmp_path, "".join(f"{n}\n" for n in ("aws-mine", *HOSTILE)))
    reply = _bash_reply(tmp_path, bindir, tmp_path, "")
    _no_file_made(tmp_path)
    assert "a b" in reply and "it's" in reply and "aws-mine" in reply, reply
    assert _bash_reply(tmp_path, bindir, tmp_path, "aws-m") == ["aws-mine"]


def _pane(name: str) -> str:
    return subprocess.run([required("tmux"), "capture-pane", "-p", "-t", name], capture_output=True, text=True,
                          timeout=30, check=True).stdout


def _until(name: str, wanted: str, timeout: float = 20.0) -> str:
    end = time.monotonic() + timeout
    text = _pane(name)
    while wanted not in text and time.monotonic() < end:
        time.sleep(0.2)
        text = _pane(name)
    return text


def test_zsh_tab_never_runs_a_stack_name(tmp_path):
    zsh, tmux = required("zsh"), required("tmux")
    project = _project(tmp_path)
    bindir = _bin(tmp_path, "".join(f"{n}\n" for n in ("aws-mine", *HOSTILE)))
    script = subprocess.run([str(bindir / "gpulease"), "completion", "zsh"], capture_output=True, text=True,
                            timeout=60, check=True).stdout
    (tmp_path / "gpulease.zsh").write_text(script)
    (tmp_path / ".zshrc").write_text(
        "PS1='ready> '\nautoload -U compinit && compinit -u\n"
        f"export PATH={shlex.quote(str(bindir))}:$PATH\n"
        f'eval "$(cat {shlex.quote(str(tmp_path / "gpulease.zsh"))})"\n'
        f"cd {shlex.quote(str(project / 'stacks'))}\n")
    name = f"gpulease-zshq-{os.getpid()}"
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "COLUMNS", "LINES")}
    subprocess.run([tmux, "new-session", "-d", "-s", name, "-x", "120", "-y", "30", "-e", f"ZDOTDIR={tmp_path}",
                    zsh, "-i"], env=env, check=True, timeout=30)
    try:
        assert "ready>" in _until(name, "ready>")
        subprocess.run([tmux, "send-keys", "-t", name, "gpulease plan ", "Tab"], check=True, timeout=30)
        text = _until(name, "aws-mine")
        assert "aws-mine" in text, text
        subprocess.run([tmux, "send-keys", "-t", name, "C-u", "gpulease plan it", "Tab"], check=True, timeout=30)
        text = _until(name, "plan it\\'s")  # the one candidate, quoted as a word
        assert "plan it\\'s" in text, text
        time.sleep(0.5)
        _no_file_made(tmp_path)
    finally:
        subprocess.run([tmux, "kill-session", "-t", name], capture_output=True, timeout=30, check=False)
