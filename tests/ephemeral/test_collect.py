"""``gpulease ephemeral collect STACK --artifacts-dir DIR``: the job's artifacts of a stack kept with its checkpoint
bucket, read where ``run`` reads them (``<checkpointUri>_gpulease/jobs/<stack>/artifacts/``, from the stack's
outputs through the backend), written by the same channel code: within the bounds, confined to the folder, never
replacing a file. What was not collected is named (exit 3); the next step is printed. Against moto's S3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpulease import cli
from gpulease.cli import ephemeral_collect
from gpulease.review.stacks import PROJECT_ROOT
from tests.support.kept_stack import JOB, STACK, collect_kept


def test_collect_downloads_the_jobs_artifacts_as_run_does(kept, tmp_path: Path, capsys) -> None:
    dest = tmp_path / "art"
    assert collect_kept("--artifacts-dir", str(dest), "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert (dest / "metrics.json").read_bytes() == b'{"loss": 1.2}'
    assert (dest / "ckpt" / "step-50.safetensors").read_bytes() == b"weights"
    assert not (dest / "theirs.txt").exists(), "only this stack's job"
    assert sorted(Path(p).name for p in doc["artifacts"]) == ["metrics.json", "step-50.safetensors"]
    assert doc["failedArtifacts"] == [] and doc["keptBuckets"] == ["kept-bkt"] and doc["exitCode"] == 0
    assert f"gpulease ephemeral down {STACK} --with-buckets" in doc["next"]
    assert kept["opened"] == [("aws", "eu-west-1")], "the bucket's cloud and region come from the stack's outputs"
    assert "destroy" not in kept["backend"].ops() and "remove" not in kept["backend"].ops()


def test_what_a_bound_leaves_behind_is_named_and_exits_3(kept, tmp_path: Path, capsys) -> None:
    code = collect_kept("--artifacts-dir", str(tmp_path / "art"), "--max-artifacts", "1")
    out = capsys.readouterr().out
    assert code == 3
    assert "not collected" in out and "--max-artifacts 1" in out
    assert f"gpulease ephemeral collect {STACK}" in out and "--with-buckets" not in out


def test_an_existing_file_is_never_replaced(kept, tmp_path: Path, capsys) -> None:
    dest = tmp_path / "art"
    dest.mkdir()
    (dest / "metrics.json").write_text("MINE")
    assert collect_kept("--artifacts-dir", str(dest), "--json") == 3, "an artifact not written is not collected"
    doc = json.loads(capsys.readouterr().out)
    assert (dest / "metrics.json").read_text() == "MINE"
    assert [r for r in doc["refusedArtifacts"] if "metrics.json" in r]
    assert "--with-buckets` deletes them" in doc["next"] and "everything collected" not in doc["next"]


def test_a_key_escaping_the_folder_is_refused(kept, tmp_path: Path, capsys) -> None:
    dest, victim = tmp_path / "art", tmp_path / "victim.txt"
    victim.write_text("PRECIOUS")
    kept["client"].put_object(Bucket="kept-bkt", Key=JOB + "/" + str(victim).lstrip("/"), Body=b"OWNED")
    collect_kept("--artifacts-dir", str(dest))
    assert victim.read_text() == "PRECIOUS"


def test_a_collection_that_fails_whole_exits_3(kept, tmp_path: Path, capsys) -> None:
    kept["backend"].outputs_by_stack[STACK]["checkpointUri"] = "s3://no-such-bkt/ckpt/"
    assert collect_kept("--artifacts-dir", str(tmp_path / "art"), "--json") == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["failedArtifacts"] and "the collection failed" in doc["failedArtifacts"][0]


def test_collect_refuses_a_stack_it_cannot_read_from(kept, tmp_path: Path, capsys) -> None:
    assert cli.main(["ephemeral", "collect", "aws-lora-7b", "--artifacts-dir", str(tmp_path)]) == 2
    assert "not an ephemeral stack" in capsys.readouterr().err
    assert cli.main(["ephemeral", "collect", "ci-1-gone", "--artifacts-dir", str(tmp_path / "a")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert collect_kept("--artifacts-dir", str(PROJECT_ROOT / "stacks")) == 2
    assert "--artifacts-dir" in capsys.readouterr().err and kept["opened"] == []


@pytest.mark.parametrize(("cloud", "zone", "region"),
                         [("aws", "us-east-1a", "us-east-1"), ("alicloud", "cn-hangzhou-h", "cn-hangzhou")])
def test_the_region_is_the_stacks_zones(cloud: str, zone: str, region: str) -> None:
    assert ephemeral_collect.bucket_region({"availabilityZone": zone}, cloud) == region
