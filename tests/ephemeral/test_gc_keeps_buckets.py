"""``ephemeral gc`` never deletes what a run did not collect: a stack past its deadline belongs to a runner that died,
so its checkpoint bucket may hold the only copy of the job's artifacts. gc destroys everything else (the instance
stops billing) and keeps the bucket with its stack; ``--with-buckets`` destroys everything. A destroy that would
keep buckets but has nothing else left to destroy runs no destroy at all: the Automation API drops an empty
``target`` list (``if target:`` in ``pulumi/automation/_stack.py``), which would destroy the buckets too."""

from __future__ import annotations

import io
import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pulumi import automation as auto
from pulumi.automation._cmd import CommandResult

from gpulease.core import vocabulary as v
from gpulease.ephemeral.backend import AutomationBackend, StackInfo
from gpulease.ephemeral.gc import collect_garbage
from gpulease.ephemeral.progress import PlainProgress
from tests.ephemeral.test_backend import STACK, Recorder, fake_pulumi
from tests.support.clock import FIXED_NOW
from tests.support.ephemeral import RecordingBackend

NOW, GRACE = FIXED_NOW, timedelta(hours=1)
P = f"urn:pulumi:{STACK}::gpulease::"
BUCKET = {"urn": P + "aws:s3/bucket:Bucket::ck", "type": "aws:s3/bucket:Bucket", "outputs": {"bucket": "ck-bkt"},
          "provider": P + "pulumi:providers:aws::default::0000"}
PROVIDER = {"urn": P + "pulumi:providers:aws::default", "type": "pulumi:providers:aws"}
ROOT = {"urn": P + "pulumi:pulumi:Stack::gpulease", "type": "pulumi:pulumi:Stack"}
INSTANCE = {"urn": P + "aws:ec2/instance:Instance::exp1", "type": "aws:ec2/instance:Instance"}


def _backend() -> RecordingBackend:
    stacks = {
        "ci-1-aaaaaaa": StackInfo("ci-1-aaaaaaa", NOW - timedelta(hours=3), 14),  # a bucket in its outputs
        "ci-2-bbbbbbb": StackInfo("ci-2-bbbbbbb", NOW - timedelta(hours=3), 14),  # a sweep: two buckets
        "ci-3-ccccccc": StackInfo("ci-3-ccccccc", NOW - timedelta(hours=2), 3),   # up never finished: no outputs
    }
    past = v.rfc3339(NOW - timedelta(hours=1))
    outputs = {
        "ci-1-aaaaaaa": {"deadline": past, "checkpointUri": "s3://ck-one/runs/x/"},
        "ci-2-bbbbbbb": {"experiments": {"a": {"deadline": past, "checkpointUri": "oss://ck-b/a/"},
                                         "b": {"deadline": past, "checkpointUri": "oss://ck-a/b/"}}},
    }
    return RecordingBackend(stacks=stacks, outputs_by_stack=outputs)


def test_gc_keeps_every_checkpoint_bucket_with_its_stack() -> None:
    backend, out = _backend(), io.StringIO()
    result = collect_garbage(backend, PlainProgress(out), now=NOW, grace=GRACE, sleep=lambda s: None)
    kept = dict(zip([s for op, s in backend.calls if op == "destroy"], backend.kept_buckets, strict=True))
    assert kept == {"ci-1-aaaaaaa": ("ck-one",), "ci-2-bbbbbbb": ("ck-a", "ck-b"), "ci-3-ccccccc": ()}
    # The stacks holding a kept bucket stay (ephemeral down removes them); the one with no bucket is removed.
    assert [s for op, s in backend.calls if op == "remove"] == ["ci-3-ccccccc"]
    assert set(backend.stacks) == {"ci-1-aaaaaaa", "ci-2-bbbbbbb"}
    assert result["exitCode"] == 0, "a bucket kept on purpose is not a failed teardown"
    teardowns = {r["stack"]: r["teardown"] for r in result["collected"]}
    assert teardowns["ci-1-aaaaaaa"]["keptBuckets"] == ["ck-one"] and teardowns["ci-1-aaaaaaa"]["destroyed"] is True
    assert "destroying ci-1-aaaaaaa but bucket ck-one" in out.getvalue()


def test_gc_with_buckets_destroys_and_removes_everything() -> None:
    backend = _backend()
    result = collect_garbage(backend, PlainProgress(io.StringIO()), now=NOW, grace=GRACE, with_buckets=True,
                             sleep=lambda s: None)
    assert backend.kept_buckets == [(), (), ()] and backend.stacks == {} and result["exitCode"] == 0


def test_gc_dry_run_names_the_bucket_it_would_keep() -> None:
    backend, out = _backend(), io.StringIO()
    result = collect_garbage(backend, PlainProgress(out), now=NOW, grace=GRACE, dry_run=True, sleep=lambda s: None)
    assert "destroy" not in backend.ops()
    assert [r["keptBuckets"] for r in result["collected"]] == [["ck-one"], ["ck-a", "ck-b"], []]
    assert "would destroy ci-2-bbbbbbb but bucket ck-a, ck-b" in out.getvalue()


class _StateRecorder(Recorder):
    """The CLI stand-in, answering ``stack export`` with a state."""

    def __init__(self, resources: list[dict[str, Any]]) -> None:
        super().__init__()
        self.resources = resources

    def __call__(self, command, args, cwd, additional_env, on_output=None, on_error=None) -> CommandResult:
        if list(args)[:2] == ["stack", "export"]:
            self.calls.append({"args": list(args), "cwd": cwd, "env": dict(additional_env)})
            return CommandResult(json.dumps({"version": 3, "deployment": {"resources": self.resources}}), "", 0)
        return super().__call__(command, args, cwd, additional_env, on_output, on_error)


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    fake_pulumi(tmp_path / "bin", "v3.182.0")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin")

    def make(resources: list[dict[str, Any]]) -> _StateRecorder:
        rec = _StateRecorder(resources)
        monkeypatch.setattr(auto.PulumiCommand, "run", lambda self, *a, **kw: rec(self, *a, **kw))
        return rec
    return make


def test_a_stack_left_with_only_its_buckets_runs_no_destroy(state) -> None:
    rec = state([ROOT, PROVIDER, BUCKET])
    result = AutomationBackend().destroy(STACK, lambda line: None, lambda e: None, keep_buckets=("ck-bkt",))
    assert rec.ops("destroy") == [] and result.resource_changes == {}


def test_keeping_a_bucket_targets_everything_else(state) -> None:
    rec = state([ROOT, PROVIDER, BUCKET, INSTANCE])
    AutomationBackend().destroy(STACK, lambda line: None, lambda e: None, keep_buckets=("ck-bkt",))
    [destroy] = rec.ops("destroy")
    targets = [destroy[i + 1] for i, a in enumerate(destroy) if a == "--target"]
    assert targets == [INSTANCE["urn"]]


def test_a_kept_bucket_the_state_does_not_hold_needs_no_keeping(state) -> None:
    # An existing checkpoints.bucket: the program only refers to it, so no destroy of the stack can delete it.
    rec = state([ROOT, PROVIDER, INSTANCE])
    AutomationBackend().destroy(STACK, lambda line: None, lambda e: None, keep_buckets=("ck-bkt",))
    [destroy] = rec.ops("destroy")
    assert [destroy[i + 1] for i, a in enumerate(destroy) if a == "--target"] == [INSTANCE["urn"]]


def test_a_kept_bucket_in_the_state_under_an_unknown_type_refuses_the_destroy(state) -> None:
    other = {"urn": P + "aws:s3/bucketV3:BucketV3::ck", "type": "aws:s3/bucketV3:BucketV3", "outputs": {"id": "ck-bkt"}}
    rec = state([ROOT, PROVIDER, other, INSTANCE])
    with pytest.raises(RuntimeError, match="'ck-bkt' is in the stack's state under a resource type not known"):
        AutomationBackend().destroy(STACK, lambda line: None, lambda e: None, keep_buckets=("ck-bkt",))
    assert rec.ops("destroy") == []
