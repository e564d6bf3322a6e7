"""A stack file named by its path is found as its bare name finds it, and a path that names no file is refused as
such: a symlinked stack file in the user's ``stacks/`` (a shared config linked in) is the same stack by its path as
by its name; ``status``, ``logs`` and ``ssh`` of a stack file path that does not exist say the file is missing,
without asking the Pulumi CLI for the outputs of a "stack" named like a path."""

from __future__ import annotations

import pytest

from gpulease.cli.main import main
from gpulease.review import stacks

EXAMPLE = stacks.PROJECT_ROOT / "stacks" / "Pulumi.aws-lora-7b.yaml"


def _exit(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_a_symlinked_stack_file_in_stacks_is_found_by_its_path_as_by_its_name(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "Pulumi.ab.yaml").write_text(EXAMPLE.read_text())
    here = tmp_path / "runs"
    (here / "stacks").mkdir(parents=True)
    (here / "stacks" / "Pulumi.ab.yaml").symlink_to(shared / "Pulumi.ab.yaml")
    monkeypatch.chdir(here)
    by_name = stacks.resolve_one("ab")
    assert by_name == here / "stacks" / "Pulumi.ab.yaml"
    try:
        by_path = stacks.resolve_one("stacks/Pulumi.ab.yaml")
    except stacks.StackNotFoundError as exc:
        pytest.fail(f"the file `ab` names is refused by its own path: {exc}")
    assert by_path.resolve() == by_name.resolve()


@pytest.mark.parametrize("verb", ["status", "logs", "ssh"])
@pytest.mark.parametrize("missing", ["./Pulumi.zz.yaml", "/nonexistent/Pulumi.zz.yaml"])
def test_a_missing_stack_file_path_is_refused_without_asking_the_pulumi_cli(verb, missing, tmp_path, monkeypatch,
                                                                            capsys):
    from gpulease.live import target

    monkeypatch.chdir(tmp_path)
    asked: list[str] = []
    monkeypatch.setattr(target, "OUTPUTS_READER", lambda stack, project_dir: asked.append(stack) or {})
    assert _exit([verb, missing]) == 2
    err = capsys.readouterr().err
    assert asked == [], f"{verb} {missing}: the Pulumi CLI was asked for the stack {asked} ({err.strip()})"
    assert "no instance outputs" not in err, err
