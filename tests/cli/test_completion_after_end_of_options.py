"""Shell completion after ``--`` (the end of the options) offers no option of the command: every word after it is
an argument (``gpulease down -- STACK``), so an option completed there would be read as the stack's name."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from gpulease.cli.main import main


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash")
@pytest.mark.parametrize("words", [["down", "--", "--a"], ["status", "--", "--"], ["plan", "--", "--f"]])
def test_no_option_completes_after_the_end_of_options(tmp_path, capsys, words):
    assert main(["completion", "bash"]) == 0
    script = tmp_path / "c.sh"
    script.write_text(capsys.readouterr().out)
    line = " ".join(["gpulease", *words])
    probe = (f"source {script}; gpulease() {{ :; }}; COMP_WORDS=({line}); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ));"
             " _gpulease; printf '%s\\n' \"${COMPREPLY[@]}\"")
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    offered = [word for word in out if word.startswith("--")]
    assert offered == [], f"{line}<TAB> offers {offered}: after --, {words[0]}'s parser takes it as the stack"
