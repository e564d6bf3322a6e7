"""The plan names its stack file as the user would type it: relative to the working folder when the file is inside
it (the header and ``stackFile``), absolute only when it lies elsewhere."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from gpulease.review.engine import StackReview
from gpulease.review.render import Rendering
from gpulease.review.report import to_json
from gpulease.review.terminal import print_terminal


def _review(stack_file: Path) -> StackReview:
    return StackReview(stack_file.parent, stack_file, Rendering(project="p", stack="s", config={}, resources=[]), None)


def _header(review: StackReview, width: int = 120) -> str:
    out = io.StringIO()
    print_terminal([review], Console(file=out, width=width, color_system=None))
    return out.getvalue().splitlines()[0]


def test_a_stack_file_inside_the_working_folder_is_named_relative_to_it(tmp_path, monkeypatch):
    (tmp_path / "stacks").mkdir()
    stack = tmp_path / "stacks" / "Pulumi.s.yaml"
    monkeypatch.chdir(tmp_path)
    review = _review(stack)
    assert "(stacks/Pulumi.s.yaml)" in _header(review)
    assert str(tmp_path) not in _header(review)
    assert to_json([review])["stacks"][0]["stackFile"] == "stacks/Pulumi.s.yaml"


def test_a_stack_file_elsewhere_keeps_its_absolute_path(tmp_path, monkeypatch):
    (tmp_path / "here").mkdir()
    stack = tmp_path / "there" / "Pulumi.s.yaml"
    monkeypatch.chdir(tmp_path / "here")
    review = _review(stack)
    assert f"({stack})" in _header(review, width=200)
    assert to_json([review])["stacks"][0]["stackFile"] == str(stack)


def test_a_long_path_goes_whole_on_its_own_line(tmp_path, monkeypatch):
    deep = tmp_path.joinpath(*["folder"] * 12)
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    print_terminal([_review(deep / "Pulumi.s.yaml")], Console(file=out, width=80, color_system=None))
    lines = out.getvalue().splitlines()
    assert lines[1] == "stack file: " + "/".join(["folder"] * 12) + "/Pulumi.s.yaml"
