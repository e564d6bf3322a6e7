"""A short option (``logs -n N``, ``ssh -i FILE``) is an option to the bash completion script, never a sub-command:
after its value the command's options (and stack names) complete."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from gpulease.cli.main import main


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash")
@pytest.mark.parametrize("words", [["logs", "-n", "5"], ["ssh", "-i", "key"]])
def test_after_a_short_options_value_the_options_complete(tmp_path, capsys, words):
    assert main(["completion", "bash"]) == 0
    script = tmp_path / "c.sh"
    script.write_text(capsys.readouterr().out)
    line = " ".join(["gpulease", *words, "''"])
    probe = (f"source {script}; gpulease() {{ :; }}; COMP_WORDS=({line}); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ));"
             " _gpulease; printf '%s\\n' \"${COMPREPLY[@]}\"")
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert "--help" in out, (sys.platform, out)
