"""The commands gpulease prints for a stack (``up``'s ``connect:``, ``status:``, ``logs:``, ``down``'s ``gpulease
down … --all``, a refused ``up``'s ``gpulease plan …``) reach the stack it deployed: in a project made from the
kit's ``pulumi new`` template, the outputs are read in that project (where ``up`` ran ``pulumi up``); a stack named
by its path is named in one shell word that finds that file when pasted, and ``status`` asks the Pulumi CLI for the
stack the file names; a stack file ``up`` refuses (another project's) is refused by ``status`` alike."""

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
    main([*shlex.split(commands["status"])[1:], "--json"])
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


def _two_stacks_named_ab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding ./Pulumi.ab.yaml (which the bare name ``ab`` finds) and stacks/Pulumi.ab.yaml: the latter."""
    here = tmp_path / "my runs"
    (here / "stacks").mkdir(parents=True)
    monkeypatch.chdir(here)
    flags = ["--params", "8B", "--owner", "a@mylab.org", "--budget", "60", "--no-port", "--no-review"]
    assert main(["init", "--name", "ab", "--output", "Pulumi.ab.yaml", *flags]) == 0
    assert main(["init", "--name", "ab", *flags]) == 0
    return here / "stacks" / "Pulumi.ab.yaml"


def _names_the_file(command: str, written: Path, verb: str, *rest: str) -> bool:
    import shlex

    argv = shlex.split(command)
    return (argv[:2] == ["gpulease", verb] and argv[3:] == list(rest)
            and stacks.resolve_one(argv[2]).resolve() == written.resolve())


def test_the_down_all_that_down_suggests_names_the_stack_file_it_destroyed(
        tmp_path, monkeypatch: pytest.MonkeyPatch, aws, reviewed, review, capsys):
    from gpulease.ephemeral.backend import StackInfo
    from gpulease.lifecycle import teardown
    from tests.support.ephemeral import RecordingBackend

    written = _two_stacks_named_ab(tmp_path, monkeypatch)
    found = RecordingBackend(stacks={"ab": StackInfo("ab")}, outputs_by_stack={"ab": dict(OUTPUTS)})
    monkeypatch.setattr(deploy, "BACKEND", lambda: found)
    monkeypatch.setattr(teardown, "CLIENTS", lambda region, creds: (aws.client("ec2"), aws.client("s3")))
    capsys.readouterr()
    assert main(["down", str(written)]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("  in all about $20.60/month until removed (") and last.endswith(")"), last
    assert _names_the_file(last.split("(", 1)[1][:-1], written, "down", "--all"), last
    assert found.ops() == ["outputs", "destroy"]


def test_the_plan_a_refused_up_suggests_names_the_stack_file_it_reviewed(
        tmp_path, monkeypatch: pytest.MonkeyPatch, reviewed, backend, capsys):
    from gpulease.lifecycle import verdict

    written = _two_stacks_named_ab(tmp_path, monkeypatch)
    monkeypatch.setattr(verdict, "REVIEW", lambda path, stack: verdict.Verdict(stack=stack, status="fail"))
    capsys.readouterr()
    assert main(["up", str(written)]) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "nothing was deployed (`" in last and last.endswith("` shows why)"), last
    assert _names_the_file(last.split("(`", 1)[1].split("`")[0], written, "plan"), last
    assert backend.calls == []


def test_status_of_a_stack_file_of_another_project_is_refused_as_up_refuses_it(
        tmp_path, monkeypatch: pytest.MonkeyPatch, capsys):
    other = tmp_path / "other"
    other.mkdir()
    (other / "Pulumi.yaml").write_text("name: other\nruntime: python\n")
    (other / "__main__.py").write_text("import pulumi\n")
    shutil.copy(stacks.PROJECT_ROOT / "stacks" / "Pulumi.aws-lora-7b.yaml", other / "Pulumi.dev.yaml")
    monkeypatch.chdir(tmp_path)
    asked: list[str] = []
    monkeypatch.setattr(target, "OUTPUTS_READER", lambda stack, project_dir: asked.append(stack) or dict(OUTPUTS))
    assert main(["status", str(other / "Pulumi.dev.yaml")]) == 2
    refusal = capsys.readouterr().err.strip().splitlines()[-1]
    assert main(["up", str(other / "Pulumi.dev.yaml")]) == 2
    assert "not a stack of this project" in refusal and refusal == capsys.readouterr().err.strip().splitlines()[-1]
    assert asked == []


def test_a_kit_stack_under_a_folder_with_a_space_is_named_in_one_shell_word(
        tmp_path, monkeypatch: pytest.MonkeyPatch, passing_review, backend, capsys):
    import shlex

    kit = tmp_path / "My Tools" / "gpulease"  # the kit installed under a folder whose name has a space
    (kit / "stacks").mkdir(parents=True)
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(stacks.PROJECT_ROOT / name, kit / name)
    example = stacks.PROJECT_ROOT / "stacks" / "Pulumi.aws-lora-7b.yaml"
    deployed = kit / "stacks" / "Pulumi.ab.yaml"
    shutil.copy(example, deployed)
    monkeypatch.setattr(stacks, "PROJECT_ROOT", kit)
    here = tmp_path / "runs"
    here.mkdir()
    shutil.copy(example, here / "Pulumi.ab.yaml")  # the bare name `ab` finds this one, not the kit's
    monkeypatch.chdir(here)
    assert main(["up", str(deployed), "--no-wait"]) == 0
    printed = [line for line in capsys.readouterr().out.splitlines()
               if line.startswith(("connect:", "status:", "logs:"))]
    assert len(printed) == 3, printed
    for line in printed:
        argv = shlex.split(line.split(":", 1)[1])
        assert len(argv) == 3 and Path(argv[2]).resolve() == deployed.resolve(), line
