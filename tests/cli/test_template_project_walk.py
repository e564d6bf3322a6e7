"""Found by probing the `pulumi new` template projects and the subfolder walk (issue 27)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STACK = "config:\n  aws:region: us-east-1\n  gpulease-new:owner: bob@corp.io\n  gpulease-new:name: projexp\n"


def gl(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **(env or {})}
    return subprocess.run([sys.executable, "-m", "gpulease", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def _project(where: Path, stack: str = "dev") -> Path:
    shutil.copytree(ROOT / "templates" / "gpulease-experiment", where)
    text = (where / "Pulumi.yaml").read_text().replace("${PROJECT}", "myexp").replace("${DESCRIPTION}", "x")
    (where / "Pulumi.yaml").write_text(text[:text.index("template:")])
    (where / f"Pulumi.{stack}.yaml").write_text(STACK)
    return where


def test_a_project_with_main_elsewhere_does_not_get_the_kits_stack_of_the_same_name(tmp_path: Path,
                                                                                      monkeypatch) -> None:
    # Pulumi.yaml `main: src/` (a documented project option): the program lives in src/__main__.py
    proj = _project(tmp_path / "proj", stack="aws-lora-7b")
    (proj / "src").mkdir()
    for name in ("__main__.py", "experiment_config.py"):
        (proj / name).rename(proj / "src" / name)
    with (proj / "Pulumi.yaml").open("a") as f:
        f.write("main: src/\n")
    from gpulease.lifecycle import deploy

    monkeypatch.chdir(proj)
    st = deploy.load("aws-lora-7b")  # up / down / resume load the stack this way
    assert st.path == (proj / "Pulumi.aws-lora-7b.yaml").resolve(), f"up would deploy {st.path}"


def test_up_reviews_the_same_project_it_deploys_in_a_pulumi_yml_project(tmp_path: Path) -> None:
    proj = _project(tmp_path / "proj")
    (proj / "Pulumi.yaml").rename(proj / "Pulumi.yml")
    by_name = gl("plan", "dev", cwd=proj)
    by_file = gl("plan", "Pulumi.dev.yaml", cwd=proj)  # what `up` reviews: verdict.REVIEW(st.path, ...)
    assert "myexp/dev" in by_name.stdout
    assert "myexp/dev" in by_file.stdout, by_file.stdout[:300] + by_file.stderr


def test_a_symlinked_home_still_stops_the_walk(tmp_path: Path) -> None:
    real = _project(tmp_path / "realhome")
    (real / "work").mkdir()
    (tmp_path / "homelink").symlink_to(real)
    out = gl("plan", "dev", cwd=real / "work", env={"HOME": str(tmp_path / "homelink")})
    assert out.returncode == 2 and "no stack 'dev'" in out.stderr, out.stdout[:300]


def test_an_empty_stack_config_dir_is_the_project_folder(tmp_path: Path) -> None:
    proj = _project(tmp_path / "proj")
    with (proj / "Pulumi.yaml").open("a") as f:
        f.write("stackConfigDir:\n")
    from gpulease.review import stacks

    assert stacks.project_info(proj)[1].resolve() == proj.resolve()


def test_a_bad_prompted_value_names_the_key_in_the_file(tmp_path: Path) -> None:
    proj = _project(tmp_path / "proj")
    (proj / "Pulumi.dev.yaml").write_text(STACK + "  gpulease-new:budgetUsd: 'inf'\n")
    out = gl("plan", "dev", cwd=proj)
    assert out.returncode == 2
    assert "gpulease-new:budgetUsd" in out.stdout + out.stderr, out.stdout[-400:]


def test_init_inside_the_kits_template_folder_does_not_write_into_the_template(tmp_path: Path, monkeypatch) -> None:
    # the template folder is copied whole by `pulumi new`: a stack file written there lands in every new project
    from gpulease.cli.main import main
    from gpulease.lifecycle import verdict
    from gpulease.review import stacks

    monkeypatch.setattr(stacks, "PROJECT_ROOT", ROOT)
    monkeypatch.setattr(verdict, "REVIEW", lambda path, stack: verdict.Verdict(
        stack=stack, status="pass", hourly_usd=0.8823, worst_case="$15.24", budget_usd=60.0))
    template = ROOT / "templates" / "gpulease-experiment"
    monkeypatch.chdir(template)
    before = set(os.listdir(template))
    try:
        main(["init", "--name", "probe-second", "--owner", "ada@example.org", "--params", "8B", "--method", "lora",
              "--no-port", "--budget", "60"])
        written = set(os.listdir(template)) - before
    finally:
        for name in set(os.listdir(template)) - before:
            (template / name).unlink()
    assert not written, f"init wrote {written} into the template folder"


def test_a_foreign_project_gets_a_refusal_not_the_kits_stack_of_the_same_name(tmp_path: Path, monkeypatch) -> None:
    proj = tmp_path / "other"
    proj.mkdir()
    (proj / "Pulumi.yaml").write_text("name: other\nruntime: python\n")
    (proj / "__main__.py").write_text("import pulumi\n")
    from gpulease.core.errors import UserError
    from gpulease.lifecycle import deploy

    monkeypatch.chdir(proj)
    with pytest.raises(UserError) as refused:
        deploy.load("aws-lora-7b")
    assert str(refused.value).startswith(f"{proj / 'Pulumi.yaml'}: ") and "\n" not in str(refused.value)
    assert "is not the kit's" in str(refused.value)


def test_a_stack_config_dir_that_is_no_folder_name_is_refused_showing_it(tmp_path: Path) -> None:
    proj = _project(tmp_path / "proj")
    with (proj / "Pulumi.yaml").open("a") as f:
        f.write("stackConfigDir: {x: 1}\n")
    out = gl("plan", "dev", cwd=proj)
    assert out.returncode == 2 and "stackConfigDir:" in out.stderr and "'x': 1" in out.stderr, out.stderr
    assert not (proj / "{'x': 1}").exists()


@pytest.mark.parametrize(("line", "key", "shown"), [
    ("  gpulease-new:name: ''\n", "gpulease-new:name", "''"),
    ("  gpulease-new:budgetUsd: '٦٠'\n", "gpulease-new:budgetUsd", "'\\u0666\\u0660' is not a number"),
])
def test_an_empty_name_and_non_ascii_digits_are_refused_naming_the_prompted_key(tmp_path: Path, line: str, key: str,
                                                                                shown: str) -> None:
    proj = _project(tmp_path / "proj")
    stack = STACK.replace("  gpulease-new:name: projexp\n", "") + line
    (proj / "Pulumi.dev.yaml").write_text(stack if "name" in line else stack + "  gpulease-new:name: projexp\n")
    out = gl("plan", "dev", cwd=proj)
    assert out.returncode == 2 and f"{key}: {shown}" in out.stdout, out.stdout[-400:]
