"""Collecting a kept stack again into the same ``--artifacts-dir``, as the printed next step says after a bound was
reached: the artifacts the first collection wrote are already there, byte for byte, so they count as collected;
the rest are fetched and the collection ends complete (exit 0, "everything collected"), so the user is told when
the bucket may go. A local file that differs from the artifact is still never replaced."""

from __future__ import annotations

import json
from pathlib import Path

from tests.ephemeral.test_collect import STACK, _collect, kept  # noqa: F401  (the fixture)


def test_following_the_hint_after_a_bound_ends_complete(kept, tmp_path: Path, capsys) -> None:  # noqa: F811
    dest = tmp_path / "art"
    assert _collect("--artifacts-dir", str(dest), "--max-artifacts", "1", "--json") == 3
    first = json.loads(capsys.readouterr().out)
    assert f"gpulease ephemeral collect {STACK} --artifacts-dir DIR" in first["next"]
    # The hint: run it again with a larger bound.
    code = _collect("--artifacts-dir", str(dest), "--max-artifacts", "10", "--json")
    doc = json.loads(capsys.readouterr().out)
    assert (dest / "metrics.json").read_bytes() == b'{"loss": 1.2}'
    assert (dest / "ckpt" / "step-50.safetensors").read_bytes() == b"weights"
    assert code == 0, doc
    assert doc["refusedArtifacts"] == [] and doc["next"].startswith("everything collected")


def test_collecting_twice_into_the_same_folder_says_everything_is_collected(kept, tmp_path: Path, capsys) -> None:  # noqa: F811
    dest = tmp_path / "art"
    assert _collect("--artifacts-dir", str(dest), "--json") == 0
    capsys.readouterr()
    code = _collect("--artifacts-dir", str(dest), "--json")
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["next"].startswith("everything collected"), doc
