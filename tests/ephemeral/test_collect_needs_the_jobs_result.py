"""``ephemeral collect`` of a kept stack whose job never finished: the instance writes ``result.json`` LAST, after
the final log chunk and the artifacts (gpulease/ephemeral/channel.py), so without it the artifacts in the bucket
are not known to be complete (the run was killed, the instance destroyed, mid-upload). Such a collection is not
"everything collected": it ends incomplete (exit 3), says the job's result is missing, and its next step never
tells the user to delete the bucket."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.kept_stack import JOB, collect_kept

RESULT = JOB.removesuffix("artifacts/") + "result.json"


def test_without_the_jobs_result_the_collection_is_incomplete(kept, tmp_path: Path, capsys) -> None:
    kept["client"].delete_object(Bucket="kept-bkt", Key=RESULT)
    code = collect_kept("--artifacts-dir", str(tmp_path / "art"), "--json")
    doc = json.loads(capsys.readouterr().out)
    assert code == 3, doc
    assert "everything collected" not in doc["next"] and "--with-buckets` deletes the bucket" not in doc["next"]
    assert "result.json" in json.dumps(doc)


def test_with_the_jobs_result_everything_is_collected(kept, tmp_path: Path, capsys) -> None:
    assert kept["client"].list_objects_v2(Bucket="kept-bkt", Prefix=RESULT)["KeyCount"] == 1
    assert collect_kept("--artifacts-dir", str(tmp_path / "art"), "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["next"].startswith("everything collected")
    assert not (tmp_path / "art" / "result.json").exists()
