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
from tests.support.zsh_session import zsh_with_completion

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


def test_zsh_tab_never_runs_a_stack_name(tmp_path):
    project = _project(tmp_path)
    bindir = _bin(tmp_path, "".join(f"{n}\n" for n in ("aws-mine", *HOSTILE)))
    with zsh_with_completion(tmp_path, bindir, project / "stacks") as zsh:
        text = zsh.tab("gpulease plan ", "aws-mine")
        assert "aws-mine" in text, text
        text = zsh.tab("gpulease plan it", "plan it\\'s")  # the one candidate, quoted as a word
        assert "plan it\\'s" in text, text
        time.sleep(0.5)
        _no_file_made(tmp_path)
