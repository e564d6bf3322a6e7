"""In a project made from templates/gpulease-experiment (as `pulumi new` would), `gpulease init` writes
Pulumi.NAME.yaml that its own review accepts (the template's program declares a spec the stack file holds), and the
`next: gpulease plan NAME` it prints (and `check NAME`) finds the file in the folder."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(ROOT), "COLUMNS": "200", "PATH": "/usr/bin:/bin", "HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "gpulease", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL)


def test_init_then_plan_in_a_template_project(tmp_path):
    project = tmp_path / "myexp"
    shutil.copytree(ROOT / "templates" / "gpulease-experiment", project)
    text = (project / "Pulumi.yaml").read_text().replace("${PROJECT}", "myexp").replace("${DESCRIPTION}", "x")
    (project / "Pulumi.yaml").write_text(text)
    done = run(project, tmp_path, "init", "--name", "tt", "--params", "8B", "--owner", "a@b.org", "--budget", "60",
               "--no-port")
    assert "ERROR" not in done.stdout, done.stdout
    again = run(project, tmp_path, "plan", "tt")
    assert "no stack 'tt'" not in again.stderr, again.stderr
    assert "PASS" in again.stdout and "is not an email address" not in again.stdout, again.stdout[:800]
    checked = run(project, tmp_path, "check", "tt")
    assert "no stack 'tt'" not in checked.stdout + checked.stderr, checked.stderr


def test_a_mistyped_name_from_inside_the_kits_stacks_folder_names_each_folder_once(tmp_path):
    done = run(ROOT / "stacks", tmp_path, "plan", "aws-lora-7x")
    line = done.stderr.strip()
    assert f"in {ROOT / 'stacks'};" in line and line.count(f"{ROOT / 'stacks'}") == 1, line
    assert "stacks/stacks" not in line, line
    assert "did you mean 'aws-lora-7b'" in line, line
