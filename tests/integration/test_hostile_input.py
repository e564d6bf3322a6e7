"""Hostile stack files, catalog overrides and policy config: one line naming the file (and line), exit 2, no
traceback, nothing registered; ``plan <project>`` still reviews the good stacks beside the bad ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpulease.cli import main
from tests.support.hostile import CORPUS, SPECIAL, make_project, make_special, stack_path
from tests.support.paths import ROOT


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project running this repository's program (stacks are added by each test)."""
    root = tmp_path / "project"
    (root / "stacks").mkdir(parents=True)
    (root / "Pulumi.yaml").write_text("name: gpulease\nruntime: python\nstackConfigDir: stacks\n")
    (root / "__main__.py").symlink_to(ROOT / "__main__.py")
    (root / "components").symlink_to(ROOT / "components")
    return root


def _plan_one(path: Path, capsys) -> tuple[int, dict, str]:
    code = main(["plan", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


@pytest.mark.parametrize(("name", "content", "phrase"), CORPUS, ids=[c[0] for c in CORPUS])
def test_each_bad_stack_file_is_one_clear_error_and_registers_nothing(project, capsys, name, content, phrase):
    path = stack_path(project / "stacks", name)
    path.write_bytes(content)
    started = time.monotonic()
    code, report, err = _plan_one(path, capsys)
    assert time.monotonic() - started < 30  # the billion-laughs file is refused, not expanded
    (stack,) = report["stacks"]
    assert code == 2 and report["exitCode"] == 2 and stack["status"] == "error"
    assert stack["resources"] == [] and stack["violations"] == []
    message = stack["error"]
    assert "\n" not in message and phrase in message, message
    assert message.startswith(f"{path}:") and "accepted:" in message
    assert "Traceback" not in err and "Traceback" not in message


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_files_that_are_not_regular_files_are_refused_without_blocking(project, capsys, name):
    path = make_special(project / "stacks", name)
    if name == "folder":
        # A folder named on the command line is a project to review: it has no Pulumi.yaml.
        assert main(["plan", str(path), "--format", "json"]) == 2
        out, err = capsys.readouterr()
        assert err == f"gpulease: {path} has no Pulumi.yaml\n"
        assert json.loads(out)["errors"] == [{"code": "bad-input", "message": f"{path} has no Pulumi.yaml"}]
        return
    code, report, _ = _plan_one(path, capsys)
    (stack,) = report["stacks"]
    assert code == 2 and stack["status"] == "error" and stack["resources"] == []
    assert stack["error"].startswith(f"{path}: {SPECIAL[name]}") and "accepted: a regular stack file" in stack["error"]


def test_plan_of_a_project_reviews_the_good_stack_and_reports_every_bad_one(tmp_path):
    # Run as the pull-request workflow runs it, in a process of its own: a FIFO that blocked or an alias bomb
    # that expanded would hit the timeout instead of hanging the suite.
    project = make_project(tmp_path / "project")
    proc = subprocess.run(
        [sys.executable, "-m", "gpulease", "plan", str(project), "--format", "json"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    by_name = {s["stack"]: s for s in report["stacks"]}
    assert by_name["good"]["status"] == "pass" and by_name["good"]["resources"]
    bad = {name: phrase for name, _, phrase in CORPUS} | SPECIAL
    assert set(by_name) == {"good", *bad}
    for name, phrase in bad.items():
        stack = by_name[name]
        assert stack["status"] == "error" and stack["resources"] == [], name
        assert phrase in stack["error"] and f"Pulumi.{name}.yaml" in stack["error"], stack["error"]


def test_markdown_comment_lists_bad_stacks_as_errors_beside_the_good_one(tmp_path, capsys):
    project = tmp_path / "project"
    make_project(project)
    for name in SPECIAL:  # keep this one in-process and quick: the regular bad files and the good stack
        path = stack_path(project / "stacks", name)
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        else:
            path.unlink()
    (project / "stacks" / "loop-partner").unlink()
    assert main(["plan", str(project), "--format", "markdown"]) == 2
    text = capsys.readouterr().out
    assert "| `gpulease/good` | ✅ pass |" in text
    for name, _, _ in CORPUS:
        assert f"| `gpulease/{name}` | ⛔ error |" in text
    assert "**Not reviewed (bad input):** " in text
