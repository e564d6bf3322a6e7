"""No command writes over a file it reads, even with ``--force``: plan's program (``__main__.py`` and its other
modules), project file, stack file and policy config; init's public key, project file and catalog override;
catalog refresh's override; each under its own name, through a symlink and through a hard link. One line, exit 2,
nothing written; ``--force`` still replaces a file the command does not read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpulease.cli.main import main
from gpulease.core.same_file import input_problem

PROGRAM = "import pulumi\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "web"
    (folder / "lib").mkdir(parents=True)
    (folder / "Pulumi.yaml").write_text("name: web\nruntime: python\n")
    (folder / "__main__.py").write_text(PROGRAM)
    (folder / "lib" / "network.py").write_text(PROGRAM)
    (folder / "Pulumi.dev.yaml").write_text("config: {}\n")
    return folder


@pytest.fixture
def no_review(monkeypatch):
    monkeypatch.setattr("gpulease.cli.plan.review", lambda *a, **k: pytest.fail("reviewed before the check"))


def _as(kind: str, original: Path, tmp_path: Path) -> Path:
    """``original`` under the name the test writes to: itself, a symlink to it, or a hard link to it."""
    if kind == "itself":
        return original
    alias = tmp_path / f"alias-{kind}-{original.name}"
    if kind == "symlink":
        alias.symlink_to(original)
    else:
        os.link(original, alias)
    return alias


def _refused(capsys, argv: list[str], *protected: Path) -> str:
    before = {p: p.read_bytes() for p in protected}
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "is a file this command reads" in err and "even with --force" in err and err.count("\n") == 1, err
    assert {p: p.read_bytes() for p in protected} == before
    return err


KINDS = ["itself", "symlink", "hardlink"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["__main__.py", "lib/network.py", "Pulumi.yaml", "Pulumi.dev.yaml"])
def test_plan_never_writes_over_its_program_project_or_stack_file(project, tmp_path, capsys, no_review, name, kind):
    target = _as(kind, project / name, tmp_path)
    _refused(capsys, ["plan", str(project), "--output", str(target), "--force"], project / name)


def test_plan_never_writes_a_new_module_into_the_program_folder(project, capsys, no_review):
    target = project / "lib" / "report.py"
    _refused(capsys, ["plan", str(project), "--output", str(target), "--force"])
    assert not target.exists()


@pytest.mark.parametrize("kind", KINDS)
def test_plan_never_writes_over_its_policy_config(project, tmp_path, capsys, no_review, kind):
    config = tmp_path / "policy.json"
    config.write_text("{}\n")
    _refused(capsys, ["plan", str(project), "--policy-config", str(config), "--output",
                      str(_as(kind, config, tmp_path)), "--force"], config)


def test_plan_with_force_still_replaces_a_file_it_does_not_read(project, tmp_path, monkeypatch):
    monkeypatch.setattr("gpulease.cli.plan.review", lambda *a, **k: [])
    notes = project / "plan-notes.md"  # in the project folder, but not a module: plan does not read it
    notes.write_text("mine\n")
    assert main(["plan", str(project), "--output", str(notes)]) == 2
    assert main(["plan", str(project), "--output", str(notes), "--force"]) == 0
    assert notes.read_text() != "mine\n"


@pytest.mark.parametrize("kind", KINDS)
def test_init_never_writes_the_stack_file_over_the_public_key_it_reads(tmp_path, key_file, reviewed, capsys, kind):
    target = _as(kind, key_file, tmp_path)
    _refused(capsys, ["init", "--name", "llama8b-lora", "--owner", "ada@example.org", "--params", "8B", "--region",
                      "us-west-2", "--ssh-from", "203.0.113.7/32", "--public-key", str(key_file), "--budget", "60",
                      "--output", str(target), "--force"], key_file)
    assert reviewed == []


@pytest.mark.parametrize("name", ["Pulumi.yaml", "catalog"])
def test_init_never_writes_over_the_project_file_or_a_catalog_override(tmp_path, key_file, reviewed, capsys,
                                                                       monkeypatch, name):
    (tmp_path / "Pulumi.yaml").write_text("name: gpulease\nruntime: python\n")
    override = tmp_path / "prices.yaml"
    override.write_text("sources: {}\n")
    monkeypatch.setenv("GPULEASE_CATALOG_OVERRIDES", str(override))
    target = tmp_path / "Pulumi.yaml" if name == "Pulumi.yaml" else _as("hardlink", override, tmp_path)
    _refused(capsys, ["init", "--name", "llama8b-lora", "--owner", "ada@example.org", "--params", "8B", "--region",
                      "us-west-2", "--no-port", "--budget", "60", "--output", str(target), "--force"], target)


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
def test_catalog_refresh_never_writes_over_an_override_under_another_name(tmp_path, capsys, kind):
    override = tmp_path / "prices.yaml"
    override.write_text("# Written by `gpulease catalog refresh` at 2026-01-01\n")
    _refused(capsys, ["catalog", "refresh", "--cloud", "aws", "--catalog", str(override), "--output",
                      str(_as(kind, override, tmp_path)), "--force"], override)


def test_a_path_not_yet_written_is_compared_resolved(tmp_path):
    (tmp_path / "sub").mkdir()
    read = tmp_path / "sub" / "later.yaml"  # not there yet: compared by its resolved name
    assert input_problem(tmp_path / "sub" / ".." / "sub" / "later.yaml", [read]) == str(read)
    assert input_problem(tmp_path / "other.yaml", [read]) is None
    assert input_problem(tmp_path / "sub" / "x.py", [], [tmp_path]) is not None
    assert input_problem(tmp_path / "sub" / "x.md", [], [tmp_path]) is None
