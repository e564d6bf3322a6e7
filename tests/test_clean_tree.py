"""The check that the suite leaves the checkout as it found it ignores only the caches tools make, and sees a file
written into a folder that was already there (an ignored ``artifacts/`` left by an earlier run) or a changed file
rewritten."""

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.clean_tree import tool_cache, tree_status


def test_tool_caches_are_left_out_and_anything_else_counts() -> None:
    for line in ("!! .hypothesis/", "!! .pytest_cache/", "!! gpulease/__pycache__/", "!! .venv/", "?? x/y.pyc"):
        assert tool_cache(line), line
    for line in ("?? artifacts/metrics.json", "!! artifacts/", " M README.md", "?? stacks/Pulumi.new.yaml"):
        assert not tool_cache(line), line


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_writes_into_a_folder_already_there_and_rewrites_are_seen(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("/artifacts/\n")
    (tmp_path / "README.md").write_text("one\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
                   check=True)
    (tmp_path / "artifacts").mkdir()
    (tmp_path / "artifacts" / "metrics.json").write_text('{"loss": 1.97}')
    (tmp_path / "README.md").write_text("two\n")
    (tmp_path / "__pycache__").mkdir()
    before = tree_status(tmp_path)
    assert before is not None and {line.split(" [")[0] for line in before} == {"!! artifacts/", " M README.md"}
    (tmp_path / "__pycache__" / "x.pyc").write_bytes(b"cache")
    assert tree_status(tmp_path) == before  # a tool's cache is not the suite's doing
    (tmp_path / "artifacts" / "model.bin").write_bytes(b"\0")
    after = tree_status(tmp_path)
    assert after != before and {line.split(" [")[0] for line in after} == {"!! artifacts/", " M README.md"}
    (tmp_path / "artifacts" / "model.bin").unlink()
    assert tree_status(tmp_path) == before
    (tmp_path / "README.md").write_text("three, longer\n")
    assert tree_status(tmp_path) != before
