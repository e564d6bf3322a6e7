"""The commands ``gpulease up`` prints after a deploy (``connect:``, ``status:``, ``logs:``) reach the stack it
deployed: in a project made from the kit's ``pulumi new`` template, the outputs are read in that project (where
``up`` ran ``pulumi up``), and a stack named by its path is named so that the printed commands work when pasted."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from gpulease.cli.main import main
from gpulease.lifecycle import deploy
from gpulease.live import target
from gpulease.review import stacks
from tests.support.ephemeral import OUTPUTS

TEMPLATE = stacks.PROJECT_ROOT / "templates" / "gpulease-experiment"


def _template_project(tmp_path: Path) -> Path:
    project = tmp_path / "work" / "myexp"
    shutil.copytree(TEMPLATE, project)
    text = (project / "Pulumi.yaml").read_text().replace("${PROJECT}", "myexp").replace("${DESCRIPTION}", "x")
    (project / "Pulumi.yaml").write_text(text)
    return project


def test_status_in_a_template_project_reads_the_outputs_of_the_project_up_deployed(
        tmp_path, monkeypatch: pytest.MonkeyPatch, reviewed, capsys):
    project = _template_project(tmp_path)
    monkeypatch.chdir(project)
    assert main(["init", "--name", "tt", "--params", "8B", "--owner", "a@mylab.org", "--budget", "60",
                 "--no-port"]) == 0
    capsys.readouterr()
    deployed_in = deploy.load("tt").work_dir  # where `gpulease up tt` runs `pulumi up`
    assert deployed_in is not None and deployed_in.resolve() == project.resolve()
    asked: list[tuple[str, Path]] = []

    def outputs(stack: str, project_dir: Path) -> dict[str, Any]:
        asked.append((stack, Path(project_dir)))
        return dict(OUTPUTS)

    monkeypatch.setattr(target, "OUTPUTS_READER", outputs)
    main(["status", "tt", "--json"])
    assert asked, "status read no outputs"
    assert [(s, p.resolve()) for s, p in asked] == [("tt", project.resolve())], asked


def test_the_commands_up_prints_for_a_stack_named_by_its_path_work_when_pasted(
        tmp_path, monkeypatch: pytest.MonkeyPatch, reviewed, passing_review, backend, capsys):
    import shlex

    here = tmp_path / "my runs"
    (here / "stacks").mkdir(parents=True)
    monkeypatch.chdir(here)
    flags = ["--params", "8B", "--owner", "a@mylab.org", "--budget", "60", "--no-port", "--no-review"]
    assert main(["init", "--name", "ab", "--output", "Pulumi.ab.yaml", *flags]) == 0  # an older stack of that name
    assert main(["init", "--name", "ab", *flags]) == 0  # written to stacks/: the bare name finds the older one
    written = here / "stacks" / "Pulumi.ab.yaml"
    capsys.readouterr()
    assert main(["up", str(written), "--no-wait"]) == 0
    printed = capsys.readouterr().out.splitlines()
    commands = {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in printed
                if line.startswith(("connect:", "status:", "logs:"))}
    assert set(commands) == {"connect", "status", "logs"}, printed
    asked: list[str] = []

    def outputs(stack: str, project_dir: Path) -> dict[str, Any]:
        asked.append(stack)
        return dict(OUTPUTS)

    monkeypatch.setattr(target, "OUTPUTS_READER", outputs)
    wrong = []
    for what, command in commands.items():
        argv = shlex.split(command)
        # each names the file that was deployed, in one shell word
        if argv[0] != "gpulease" or len(argv) != 3 or stacks.resolve_one(argv[2]).resolve() != written.resolve():
            wrong.append(f"{what}: {command}")
    assert not wrong, wrong
    main(shlex.split(commands["status"])[1:] + ["--json"])
    assert asked == ["ab"], f"status asked the Pulumi CLI for stack {asked}, the deployed stack is 'ab'"


def test_status_given_a_stack_file_asks_the_pulumi_cli_for_its_stack_name(
        tmp_path, monkeypatch: pytest.MonkeyPatch, reviewed, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--name", "ab", "--params", "8B", "--owner", "a@mylab.org", "--budget", "60",
                 "--no-port", "--no-review"]) == 0
    asked: list[str] = []

    def outputs(stack: str, project_dir: Path) -> dict[str, Any]:
        asked.append(stack)
        return dict(OUTPUTS)

    monkeypatch.setattr(target, "OUTPUTS_READER", outputs)
    main(["status", str(tmp_path / "Pulumi.ab.yaml"), "--json"])
    assert asked == ["ab"], f"status asked the Pulumi CLI for stack {asked}; `pulumi up` made stack 'ab'"
