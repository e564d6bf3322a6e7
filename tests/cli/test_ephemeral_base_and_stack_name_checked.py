"""``gpulease ephemeral up|run --base-stack`` is a stack argument like every other: an empty name, or a
project folder of several stacks, is one clear line and exit 2 before anything is created (never a traceback);
``--stack-name ''`` is refused as ``ephemeral down ''`` is, never replaced by the default name."""

from __future__ import annotations

import pytest

from gpulease.cli.main import main
from gpulease.review import stacks


def _exit(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.fixture
def ci_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_RUN_ID", "1")
    monkeypatch.setenv("GITHUB_SHA", "abcdef0123456789")


@pytest.mark.parametrize("base", ["", "."])
@pytest.mark.parametrize("verb", [["up", "--no-wait"], ["run", "--", "true"]])
def test_an_empty_or_folder_base_stack_is_one_line_and_exit_2(ci_env, base, verb, monkeypatch, capsys):
    monkeypatch.chdir(stacks.PROJECT_ROOT)  # the kit's folder: a project of many stacks
    argv = ["ephemeral", verb[0], "--base-stack", base, *verb[1:]]
    code = _exit(argv)
    err = capsys.readouterr().err
    assert code == 2, (argv, code, err[-400:])
    assert "Traceback" not in err and "--base-stack" in err, err[-400:]
    if not base:
        assert "empty stack name" in err, err[-400:]  # refused as every stack argument is, not looked up


def test_an_empty_stack_name_is_refused_not_defaulted(ci_env, monkeypatch, capsys):
    from gpulease.cli import ephemeral
    from tests.support.ephemeral import RecordingBackend

    backend = RecordingBackend()
    monkeypatch.setattr(ephemeral, "BACKEND_FACTORY", lambda args: backend)
    monkeypatch.setattr(ephemeral, "CREDENTIALS_CHECK", lambda cloud, stack: "env")
    code = _exit(["ephemeral", "up", "--base-stack", "aws-lora-7b", "--stack-name", "", "--no-wait"])
    err = capsys.readouterr().err
    assert "up" not in backend.ops(), f"--stack-name '' brought up {sorted(backend.stacks)}"
    assert code == 2 and "--stack-name" in err and "empty stack name" in err, (code, err[-400:])
