"""`up` and `down` without the Pulumi CLI: one line that names what is missing for them (not "ephemeral stacks"),
and says nothing was changed (a `down` creates nothing either way)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_up_and_down_without_pulumi_name_themselves_and_change_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "exp"
    (tmp_path / "empty-path").mkdir()
    folder.mkdir()
    shutil.copy(ROOT / "stacks" / "Pulumi.aws-lora-7b.yaml", folder / "Pulumi.my-exp.yaml")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", "PATH": str(tmp_path / "empty-path")}
    for command in ("up", "down"):
        done = subprocess.run([sys.executable, "-m", "gpulease", command, "my-exp"], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        line = done.stderr.strip().splitlines()[-1]
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert "the Pulumi CLI is not installed" in line and "(up, down, ephemeral)" in line, line
        assert "ephemeral stacks" not in line and "Nothing was changed." in line, line
        assert "Nothing was created" not in line, line
