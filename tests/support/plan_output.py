"""Fixtures of the ``plan --output`` refusal tests: a minimal foreign Pulumi project, and a ``review`` that fails
the test if the stacks are planned (the output path is checked before anything is reviewed)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def web_project(tmp_path: Path) -> Path:
    folder = tmp_path / "web"
    folder.mkdir()
    (folder / "Pulumi.yaml").write_text("name: web\nruntime: python\n")
    (folder / "__main__.py").write_text("import pulumi\n")
    (folder / "Pulumi.dev.yaml").write_text("config: {}\n")
    return folder


@pytest.fixture
def checked_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gpulease.cli.plan.review",
                        lambda *a, **k: pytest.fail("the stacks were planned: the output path was accepted"))
