"""Collecting a kept stack again into the same ``--artifacts-dir``, as the printed next step says after a bound was
reached: the artifacts the first collection wrote are already there, byte for byte, so they count as collected;
the rest are fetched and the collection ends complete (exit 0, "everything collected"), so the user is told when
the bucket may go. A local file that differs from the artifact is still never replaced."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.kept_stack import STACK, collect_kept


def test_following_the_hint_after_a_bound_ends_complete(kept, tmp_path: Path, capsys) -> None:
    dest = tmp_path / "art"
    assert collect_kept("--artifacts-dir", str(dest), "--max-artifacts", "1", "--json") == 3
    first = json.loads(capsys.readouterr().out)
    assert f"gpulease ephemeral collect {STACK} --artifacts-dir DIR" in first["next"]
    # The hint: run it again with a larger bound.
    code = collect_kept("--artifacts-dir", str(dest), "--max-artifacts", "10", "--json")
    doc = json.loads(capsys.readouterr().out)
    assert (dest / "metrics.json").read_bytes() == b'{"loss": 1.2}'
    assert (dest / "ckpt" / "step-50.safetensors").read_bytes() == b"weights"
    assert code == 0, doc
    assert doc["refusedArtifacts"] == [] and doc["next"].startswith("everything collected")


def test_collecting_twice_into_the_same_folder_says_everything_is_collected(kept, tmp_path: Path, capsys) -> None:
    dest = tmp_path / "art"
    assert collect_kept("--artifacts-dir", str(dest), "--json") == 0
    capsys.readouterr()
    code = collect_kept("--artifacts-dir", str(dest), "--json")
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["next"].startswith("everything collected"), doc


def test_a_local_file_of_the_same_size_but_other_bytes_stays_refused(kept, tmp_path: Path, capsys) -> None:
    dest = tmp_path / "art"
    dest.mkdir()
    (dest / "metrics.json").write_bytes(b'{"loss": 9.9}')  # as long as the artifact, not it
    assert collect_kept("--artifacts-dir", str(dest), "--json") == 3
    doc = json.loads(capsys.readouterr().out)
    assert (dest / "metrics.json").read_bytes() == b'{"loss": 9.9}'
    assert [r for r in doc["refusedArtifacts"] if "metrics.json" in r]


@pytest.fixture
def multipart_etags(kept) -> Any:
    """ETags that are no MD5 of the bytes (a multipart upload, SSE-KMS): only the bytes themselves can tell."""
    listing = kept["client"].list_objects_v2

    def listed(**kwargs: Any) -> dict[str, Any]:
        page = listing(**kwargs)
        for item in page.get("Contents", []):
            item["ETag"] = '"0123456789abcdef0123456789abcdef-2"'
        return page

    kept["client"].list_objects_v2 = listed
    return kept


def test_without_an_md5_etag_the_bytes_decide(multipart_etags, tmp_path: Path, capsys) -> None:
    dest = tmp_path / "art"
    assert collect_kept("--artifacts-dir", str(dest), "--json") == 0
    capsys.readouterr()
    assert collect_kept("--artifacts-dir", str(dest), "--json") == 0, "the same bytes count as collected"
    capsys.readouterr()
    (dest / "metrics.json").unlink()
    (dest / "metrics.json").write_bytes(b'{"loss": 9.9}')
    assert collect_kept("--artifacts-dir", str(dest), "--json") == 3, "other bytes of the same size stay refused"
    assert (dest / "metrics.json").read_bytes() == b'{"loss": 9.9}'
