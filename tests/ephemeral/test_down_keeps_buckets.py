"""``gpulease ephemeral down`` keeps the checkpoint buckets its stack's outputs name, as ``ephemeral gc`` does: the
workflow runs it after every run (``if: always()``), also after a run that kept its bucket because artifacts were not
collected, or was cancelled before it collected them. ``--with-buckets`` destroys and removes everything. The hints
printed name ``ephemeral collect``, which reads the kept stack's outputs (``gpulease pull`` needs a stack file the
runner had)."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest

from gpulease import cli
from gpulease.cli import ephemeral
from gpulease.core import vocabulary as v
from gpulease.ephemeral.backend import StackInfo
from gpulease.ephemeral.gc import collect_garbage
from gpulease.ephemeral.progress import PlainProgress
from tests.support.clock import FIXED_NOW
from tests.support.ephemeral import RecordingBackend

STACK = "ci-9001-0123456"


@pytest.fixture
def backend(monkeypatch: pytest.MonkeyPatch) -> RecordingBackend:
    made = RecordingBackend(stacks={STACK: StackInfo(STACK, resource_count=12)},
                            outputs_by_stack={STACK: {"checkpointUri": "s3://ck-kept/ckpt/", "deadline": "2099-01-01T00:00:00Z"}})
    monkeypatch.setattr(ephemeral, "BACKEND_FACTORY", lambda args: made)
    return made


def test_down_keeps_the_checkpoint_bucket_and_its_stack(backend, capsys) -> None:
    assert cli.main(["ephemeral", "down", STACK, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert backend.kept_buckets == [("ck-kept",)] and "remove" not in backend.ops() and STACK in backend.stacks
    assert doc["teardown"]["keptBuckets"] == ["ck-kept"] and doc["teardown"]["destroyed"] is True


def test_down_again_keeps_it_again_and_the_stack_stays_listed(backend, capsys) -> None:
    cli.main(["ephemeral", "down", STACK])
    assert cli.main(["ephemeral", "down", STACK]) == 0
    line = capsys.readouterr().out
    assert backend.kept_buckets == [("ck-kept",), ("ck-kept",)] and "remove" not in backend.ops()
    assert f"gpulease ephemeral collect {STACK} --artifacts-dir DIR" in " ".join(line.split())
    assert f"gpulease ephemeral down {STACK} --with-buckets" in " ".join(line.split())
    assert cli.main(["ephemeral", "ls", "--json"]) == 0
    assert [s["stack"] for s in json.loads(capsys.readouterr().out)["stacks"]] == [STACK]


def test_down_with_buckets_destroys_and_removes_everything(backend, capsys) -> None:
    assert cli.main(["ephemeral", "down", STACK, "--with-buckets", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert backend.kept_buckets == [()] and backend.stacks == {} and doc["teardown"]["removed"] is True
    assert doc["teardown"]["keptBuckets"] == [] and "outputs" not in backend.ops()


def test_down_of_a_stack_already_gone_is_done(backend, capsys) -> None:
    backend.stacks.clear()
    assert cli.main(["ephemeral", "down", STACK, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["teardown"]["removed"] is True


def test_the_hints_of_gc_and_the_teardown_name_collect(backend) -> None:
    backend.outputs_by_stack[STACK]["deadline"] = v.rfc3339(FIXED_NOW - timedelta(hours=1))
    out = io.StringIO()
    collect_garbage(backend, PlainProgress(out), now=FIXED_NOW, grace=timedelta(hours=1), sleep=lambda s: None)
    assert f"gpulease ephemeral collect {STACK} --artifacts-dir DIR" in out.getvalue()
    assert "gpulease pull" not in out.getvalue()
