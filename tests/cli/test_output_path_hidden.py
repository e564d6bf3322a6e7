"""An output path the CLI writes (``plan --output``, ``ephemeral run --artifacts-dir``) holding a character that is
not shown as itself (not UTF-8 ``\\xff``, U+202E, ESC) is refused in one line naming it escaped, before any work:
the file written would not be the one its name reads as."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpulease.cli.main import main
from gpulease.cli.output_file import OutputPathError, refuse_input_folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "web"
    folder.mkdir()
    (folder / "Pulumi.yaml").write_text("name: web\nruntime: python\n")
    (folder / "__main__.py").write_text("import pulumi\n")
    (folder / "Pulumi.dev.yaml").write_text("config: {}\n")
    return folder


@pytest.mark.parametrize(("name", "shown"), [(os.fsdecode(b"r\xff.md"), "r\\xff.md"), ("r\u202egp.md", "r\\u202egp.md"),
                                             ("r\x1b[31m.md", "r\\x1b[31m.md")])
def test_plan_refuses_an_output_name_with_a_hidden_character(project, tmp_path, capsys, monkeypatch, name, shown):
    monkeypatch.setattr("gpulease.cli.plan.review", lambda *a, **k: pytest.fail("reviewed before the check"))
    target = tmp_path / name
    assert main(["plan", str(project), "--output", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and shown in err and "\x1b" not in err and "\u202e" not in err
    assert not os.path.lexists(target)


def test_an_artifacts_folder_with_a_hidden_character_is_refused(tmp_path: Path) -> None:
    with pytest.raises(OutputPathError, match=r"--artifacts-dir .*art\\u202e"):
        refuse_input_folder(tmp_path / "art\u202e")
