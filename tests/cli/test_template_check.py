"""A project made from templates/gpulease-experiment: `check` reads its prompted stack."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def _project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    shutil.copytree(ROOT / "templates" / "gpulease-experiment", proj)
    (proj / "Pulumi.yaml").write_text((proj / "Pulumi.yaml").read_text().replace("${PROJECT}", "myexp")
                                      .replace("${DESCRIPTION}", "x"))
    (proj / "Pulumi.dev.yaml").write_text(
        "config:\n  aws:region: us-east-1\n  gpulease-new:name: llama8b-lora\n  gpulease-new:owner: bob@corp.io\n"
        "  gpulease-new:budgetUsd: 60\n  gpulease-new:maxRuntimeHours: '8'\n  gpulease-new:sshFrom: none\n")
    return proj


def test_up_and_down_load_the_template_stack_in_its_own_project(tmp_path: Path, monkeypatch) -> None:
    from gpulease.lifecycle import deploy

    proj = _project(tmp_path)
    monkeypatch.chdir(proj)
    st = deploy.load("dev")
    assert st.path == (proj / "Pulumi.dev.yaml").resolve()
    assert st.spec.base.name == "llama8b-lora" and st.spec.base.budget_usd == 60 and st.region == "us-east-1"
    # pulumi runs in the user's project (its own name, its own stack), reading its own stack file
    assert st.work_dir == proj.resolve() and st.config_file is None
    seen: list[Any] = []
    monkeypatch.setattr(deploy, "BACKEND", lambda **kw: seen.append(kw) or object())
    deploy.backend_for(st)
    assert seen == [{"work_dir": proj.resolve()}]


def test_a_subfolder_of_the_template_project_finds_its_stacks(tmp_path: Path) -> None:
    proj = _project(tmp_path)
    deeper = proj / "sub" / "deeper"
    deeper.mkdir(parents=True)
    out = gl("plan", "dev", cwd=deeper)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "llama8b-lora" in out.stdout


def test_init_in_a_subfolder_writes_into_the_template_project(tmp_path: Path, monkeypatch) -> None:
    from gpulease.cli.main import main
    from gpulease.lifecycle import verdict

    monkeypatch.setattr(verdict, "REVIEW", lambda path, stack: verdict.Verdict(
        stack=stack, status="pass", hourly_usd=0.8823, worst_case="$15.24", budget_usd=60.0))
    proj = _project(tmp_path)
    deeper = proj / "sub" / "deeper"
    deeper.mkdir(parents=True)
    monkeypatch.chdir(deeper)
    assert main(["init", "--name", "second", "--owner", "ada@example.org", "--params", "8B", "--method", "lora",
                 "--no-port", "--budget", "60"]) == 0
    assert (proj / "Pulumi.second.yaml").is_file()
    assert not list(deeper.rglob("Pulumi.*"))


def test_the_walk_up_stops_below_a_home_folder(tmp_path: Path) -> None:
    home = _project(tmp_path)  # a stray Pulumi.yaml (the kit's program) in the home folder claims nothing under it
    below = home / "work"
    below.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100", "HOME": str(home)}
    out = subprocess.run([sys.executable, "-m", "gpulease", "plan", "dev"], cwd=below, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "no stack 'dev'" in out.stderr, out.stdout + out.stderr
    assert gl("plan", "dev", cwd=below).returncode == 0  # the same folder, not a home: found


def test_from_a_subfolder_the_refusal_names_exactly_the_places_searched(tmp_path: Path) -> None:
    proj = _project(tmp_path)
    deeper = proj / "sub" / "deeper"
    (deeper / "stacks").mkdir(parents=True)
    # A stack file left in the subfolder is not one of the project's: a bare name does not find it.
    shutil.copy(ROOT / "stacks" / "Pulumi.aws-lora-7b.yaml", deeper / "Pulumi.stray.yaml")
    shutil.copy(ROOT / "stacks" / "Pulumi.aws-lora-7b.yaml", deeper / "stacks" / "Pulumi.stray2.yaml")
    for name in ("stray", "stray2"):
        out = gl("plan", name, cwd=deeper)
        assert out.returncode == 2, out.stdout + out.stderr
        line = out.stderr.strip().splitlines()[-1]
        assert f"no stack '{name}' in {proj.resolve()} or {ROOT / 'stacks'} " in line, line
        assert "deeper" not in line, line
    assert gl("plan", "dev", cwd=deeper).returncode == 0  # the project's own stack is found from there
