"""The ``pulumi new`` template's program names its stack file where the Pulumi CLI reads it: in a project that
sets ``stackConfigDir`` (``stackConfigDir: config``), ``config/Pulumi.<stack>.yaml`` (the folder ``gpulease init``
writes the stack into there), so a refusal names a file that exists."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_template_yml_source import _source


def test_the_program_names_the_stack_file_in_the_projects_stack_config_dir(tmp_path, monkeypatch):
    (tmp_path / "Pulumi.yaml").write_text("name: myexp\nruntime: python\nstackConfigDir: config\n")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "Pulumi.dev.yaml").write_text("config: {}\n")
    assert _source(monkeypatch, tmp_path) == str(Path("config") / "Pulumi.dev.yaml")
