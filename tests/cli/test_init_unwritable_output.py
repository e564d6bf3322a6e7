"""``gpulease init --output FILE`` where the file cannot be written (a name the filesystem refuses as too long, once
``init``'s temporary name beside it is longer still; a path longer than the system takes; a folder that takes no new
files) is a user mistake: one line naming ``--output``, exit 2, nothing written, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FLAGS = ["--name", "kl", "--params", "8B", "--owner", "a@mylab.org", "--budget", "60", "--no-port", "--no-review"]


def _init(cwd: Path, output: str) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(ROOT), "COLUMNS": "200", "PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    return subprocess.run([sys.executable, "-m", "gpulease", "init", *FLAGS, "--output", output], cwd=cwd, env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)


@pytest.mark.parametrize("output", [
    "a" * 245 + ".yaml",  # 250 characters: a valid name; the temporary file beside it is not
    "/".join(["d" * 200] * 30) + "/Pulumi.kl.yaml",  # longer than PATH_MAX
    "/proc/Pulumi.kl.yaml",  # a folder no file can be created in
], ids=["long-name", "long-path", "no-new-files"])
def test_an_output_that_cannot_be_written_is_one_line_and_exit_2(tmp_path, output):
    done = _init(tmp_path, output)
    assert "Traceback" not in done.stderr, done.stderr[-600:]
    assert done.returncode == 2, (done.returncode, done.stderr[-600:])
    assert len(done.stderr.strip().splitlines()) == 1 and "--output" in done.stderr, done.stderr
