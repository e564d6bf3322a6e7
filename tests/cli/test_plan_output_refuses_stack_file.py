"""``plan STACK --output stacks/Pulumi.NEW.yaml`` writes the report as a new stack file of the project (exit 0):
``plan .`` then fails on it and ``pulumi up -s NEW`` would read it. ``pull`` refuses to write a
``Pulumi.<name>.yaml`` beside the project's stack files (``stack_file_problem``); ``--output`` should too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_plan_output_refuses_a_new_stack_file_beside_the_projects(tmp_path: Path) -> None:
    target = ROOT / "stacks" / "Pulumi.found-output-probe.yaml"
    assert not target.exists()
    try:
        run = subprocess.run([sys.executable, "-m", "gpulease", "plan", "aws-debug-t4", "--output", str(target)],
                             cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                             timeout=120)
        assert run.returncode == 2, run.stdout[-500:] + run.stderr[-500:]
        assert not target.exists()
    finally:
        target.unlink(missing_ok=True)
