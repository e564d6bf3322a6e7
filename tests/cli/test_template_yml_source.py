"""The ``pulumi new`` template's program names its stack file as the Pulumi CLI does: ``Pulumi.<stack>`` with the
project file's extension, so in a ``Pulumi.yml`` project every refusal names ``Pulumi.<stack>.yml``, a file that
exists."""

from __future__ import annotations

import runpy
import sys
import types
from pathlib import Path

import pytest

TEMPLATE = Path(__file__).resolve().parents[2] / "templates" / "gpulease-experiment" / "__main__.py"


def _source(monkeypatch, cwd: Path) -> str:
    seen: list[str] = []
    program = types.ModuleType("components.program")
    program.main = lambda source=None, **_: seen.append(source)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "components.program", program)
    import pulumi

    monkeypatch.setattr(pulumi, "get_stack", lambda: "dev")
    monkeypatch.chdir(cwd)
    runpy.run_path(str(TEMPLATE), run_name="__main__")
    [source] = seen
    return source


@pytest.mark.parametrize("project", ["Pulumi.yml", "Pulumi.yaml"])
def test_the_program_names_the_stack_file_with_the_project_files_extension(tmp_path, monkeypatch, project):
    (tmp_path / project).write_text("name: myexp\nruntime: python\n")
    expected = f"Pulumi.dev{Path(project).suffix}"
    assert _source(monkeypatch, tmp_path) == expected


def test_a_program_under_main_names_the_projects_stack_file(tmp_path, monkeypatch):
    (tmp_path / "Pulumi.yml").write_text("name: myexp\nruntime: python\nmain: src/\n")
    (tmp_path / "src").mkdir()
    assert _source(monkeypatch, tmp_path / "src") == str(Path("..") / "Pulumi.dev.yml")
