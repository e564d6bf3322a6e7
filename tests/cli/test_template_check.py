"""A project made from templates/gpulease-experiment: `check` reads its prompted stack."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def gl(*args: str, columns: int = 100, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-m", "gpulease", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_template_project_check_reads_the_prompted_stack(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    shutil.copytree(ROOT / "templates" / "gpulease-experiment", proj)
    (proj / "Pulumi.yaml").write_text((proj / "Pulumi.yaml").read_text().replace("${PROJECT}", "myexp")
                                      .replace("${DESCRIPTION}", "x"))
    (proj / "Pulumi.dev.yaml").write_text(
        "config:\n  aws:region: us-east-1\n  gpulease-new:name: llama8b-lora\n  gpulease-new:owner: bob@corp.io\n"
        "  gpulease-new:params: 8B\n  gpulease-new:method: lora\n  gpulease-new:budgetUsd: '60'\n"
        "  gpulease-new:maxRuntimeHours: '8'\n  gpulease-new:sshFrom: none\n  gpulease-new:publicKey: ''\n")
    assert gl("plan", "dev", cwd=proj).returncode == 0
    out = gl("check", "dev", cwd=proj)
    assert "declare exactly one" not in out.stdout + out.stderr
