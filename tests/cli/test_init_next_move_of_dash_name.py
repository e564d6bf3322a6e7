"""The ``mv`` that ``gpulease init``'s ``next:`` line suggests works when pasted into a shell, also for an
``--output`` whose name starts with ``-`` (which ``mv`` would take for its options without ``--`` or ``./``)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from gpulease.cli.main import main

FLAGS = ["--params", "8B", "--owner", "a@mylab.org", "--budget", "60", "--no-port", "--no-review"]


@pytest.mark.skipif(shutil.which("mv") is None, reason="mv")
def test_the_suggested_move_of_a_dash_named_output_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "300")  # the next: line on one line
    assert main(["init", "--name", "gh", "--output=-x.yaml", *FLAGS]) == 0
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith("next: ")][-1]
    found = re.search(r": (mv .*?), then gpulease plan gh$", line)
    assert found, line
    done = subprocess.run(["bash", "-c", found.group(1)], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, (found.group(1), done.stderr)
    assert (tmp_path / "Pulumi.gh.yaml").is_file() and not (tmp_path / "-x.yaml").exists()
