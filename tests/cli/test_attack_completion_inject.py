"""Attack (issue 27): bash completion feeds stack names through `compgen -W "$words"`, which expands them: a stack
file named Pulumi.$(touch PWNED).yaml runs a command when the user presses TAB."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_tab_never_runs_a_stack_name(tmp_path):
    if not shutil.which("bash"):
        return
    (tmp_path / "stacks").mkdir()
    for f in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / f, tmp_path / f)
    shutil.copy(ROOT / "stacks" / "Pulumi.aws-lora-7b.yaml", tmp_path / "stacks" / "Pulumi.$(touch PWNED).yaml")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "gpulease").write_text(f"#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m gpulease \"$@\"\n")
    (bindir / "gpulease").chmod(0o755)
    script = subprocess.run([str(bindir / "gpulease"), "completion", "bash"], capture_output=True, text=True).stdout
    drive = script + '\nCOMP_WORDS=(gpulease plan ""); COMP_CWORD=2; _gpulease; printf "%s\\n" "${COMPREPLY[@]}"\n'
    env = {**os.environ, "PATH": f"{bindir}:/usr/bin:/bin"}
    subprocess.run(["bash", "--norc", "-c", drive], cwd=tmp_path / "stacks", env=env, capture_output=True, text=True)
    assert not (tmp_path / "stacks" / "PWNED").exists(), "TAB ran $(touch PWNED) from a stack file name"
