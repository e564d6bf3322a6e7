"""A mistyped stack name in a folder of thousands of stack files: the refusal lists the 10 nearest names and how
many more, one short line (gpulease/review/stacks.py)."""

from __future__ import annotations

from gpulease.review import stacks
from tests.support.paths import ROOT


def test_a_mistyped_name_lists_the_ten_nearest_and_how_many_more(tmp_path, monkeypatch) -> None:
    (tmp_path / "stacks").mkdir()
    for i in range(10_000):
        (tmp_path / "stacks" / f"Pulumi.exp-{i:05d}.yaml").write_text("config: {}\n")
    monkeypatch.chdir(tmp_path)
    line = stacks.not_found("exp-0001x", ROOT)
    assert len(line) < 1000, len(line)
    assert 1 <= line.count(", exp-") <= 10 and "exp-0001x" in line
    assert str(len(stacks.known_names(ROOT)) - 10) + " more" in line
