"""What ``ephemeral gc`` and a run's teardown keep of a stack whose artifacts were not collected, checked on the
state the real program makes (rendered under mocks, as ``gpulease plan`` renders it).

- A stack whose checkpoints go to an existing ``checkpoints.bucket`` (the user's, never the stack's) holds no
  bucket resource: a destroy cannot delete that bucket, so everything the stack made is destroyed and the instance
  stops billing, instead of every destroy being refused for ever.
- A kept checkpoint bucket stays as the stack made it: private, encrypted, versioned, TLS-only, with its lifecycle
  rules. The resources that only configure that bucket are kept with it; destroying them would suspend its
  versioning and lift its public-access block and its TLS-only policy while it holds the only copy of the artifacts.
- The workflow's ``if: always()`` clean-up (``ephemeral down --current-run``) runs after every run, so it never
  deletes a bucket the run kept because its artifacts were not collected.
- A teardown that kept a bucket after a destroy that needed a retry reports no error.
- ``--json`` names the kept buckets as a list, ``keptBuckets``.
"""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from gpulease import cli
from gpulease.cli import ephemeral
from gpulease.core import vocabulary as v
from gpulease.ephemeral.backend import StackInfo, all_but_buckets
from gpulease.ephemeral.gc import collect_garbage
from gpulease.ephemeral.orchestrator import stack_buckets
from gpulease.ephemeral.progress import PlainProgress
from gpulease.review.render import Rendering
from tests.support.alicloud import ali_experiment, render_ali
from tests.support.clock import FIXED_NOW
from tests.support.ephemeral import RecordingBackend, ScriptedChannel
from tests.support.specs import experiment, render_experiment

BUCKET_SETTINGS_AWS = (
    "aws:s3/bucketOwnershipControls:BucketOwnershipControls",
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    "aws:s3/bucketVersioning:BucketVersioning",
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
    "aws:s3/bucketPolicy:BucketPolicy",
)
BUCKET_SETTINGS_ALICLOUD = (
    "alicloud:oss/bucketAcl:BucketAcl",
    "alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock",
    "alicloud:oss/bucketPolicy:BucketPolicy",
)


def state_of(rendering: Rendering) -> list[dict[str, Any]]:
    """The rendered program as ``pulumi stack export`` lists it (the fields ``all_but_buckets`` reads)."""
    assert rendering.error is None, rendering.error
    return [
        {"urn": r.urn, "type": r.type, "outputs": r.outputs, "parent": r.parent, "dependencies": r.dependencies,
         "propertyDependencies": r.property_dependencies, "provider": r.provider}
        for r in rendering.resources
    ]


def test_a_stack_on_an_existing_checkpoints_bucket_is_destroyed_and_its_instance_goes() -> None:
    spec = experiment(checkpoints={"prefix": "ckpt/", "intervalMinutes": 15, "bucket": "team-owned-checkpoints"})
    rendering = render_experiment(spec)
    kept = stack_buckets(rendering.outputs)
    assert kept == ("team-owned-checkpoints",), "the outputs name the user's bucket"
    state = state_of(rendering)
    # The user's bucket is not in the state: no destroy of this stack can delete it.
    assert not [r for r in state if (r["outputs"] or {}).get("bucket") == "team-owned-checkpoints"
                and r["type"].endswith((":Bucket", ":BucketV2"))]
    targets = all_but_buckets(state, kept)
    [instance] = [r["urn"] for r in state if r["type"] == "aws:ec2/instance:Instance"]
    assert instance in targets, "the instance is destroyed (it bills until then)"


@pytest.mark.parametrize(
    ("render_it", "settings"),
    [
        (lambda: render_experiment(experiment()), BUCKET_SETTINGS_AWS),
        (lambda: render_ali(ali_experiment()), BUCKET_SETTINGS_ALICLOUD),
    ],
    ids=["aws", "alicloud"],
)
def test_a_kept_checkpoint_bucket_keeps_its_privacy_encryption_versioning_and_policy(render_it, settings) -> None:
    rendering = render_it()
    kept = stack_buckets(rendering.outputs)
    state = state_of(rendering)
    targets = set(all_but_buckets(state, kept))
    configuring = [r for r in state if r["type"] in settings and (r["outputs"] or {}).get("bucket") in kept]
    assert len(configuring) == len(settings), "the program configures its checkpoint bucket with these resources"
    destroyed = sorted(r["type"] for r in configuring if r["urn"] in targets)
    assert destroyed == [], f"the kept bucket would lose: {destroyed}"
    instances = [r["urn"] for r in state if r["type"].endswith("/instance:Instance")]
    assert instances and all(u in targets for u in instances), "the instance still goes"
    roles = [r["urn"] for r in state if r["type"].endswith("/role:Role")]
    assert roles and all(u in targets for u in roles), "the roles still go"
    kept_types = {r["type"].partition("/")[0] for r in state if r["urn"] not in targets and "/" in r["type"]}
    assert kept_types <= {"aws:s3", "alicloud:oss", "time:index"}, f"kept beyond the bucket: {kept_types}"


GITHUB = {"GITHUB_RUN_ID": "9001", "GITHUB_RUN_ATTEMPT": "1", "GITHUB_SHA": "0123456789abcdef",
          "GITHUB_REPOSITORY": "octo/repo", "CI": "true"}
STACK = "ci-9001-0123456"


def test_the_workflows_clean_up_step_never_deletes_a_bucket_the_run_kept(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for key, value in GITHUB.items():
        monkeypatch.setenv(key, value)
    backend, channel = RecordingBackend(), ScriptedChannel(failed_artifacts=["model.safetensors"])
    monkeypatch.setattr(ephemeral, "BACKEND_FACTORY", lambda args: backend)
    monkeypatch.setattr(ephemeral, "CHANNEL_FACTORY", lambda cfg: channel)
    monkeypatch.setattr(ephemeral, "CREDENTIALS_CHECK", lambda cloud, stack: "env")
    # The workflow's run step: an artifact is not collected, so the run keeps the bucket (exit 3).
    code = cli.main(["ephemeral", "run", "--base-stack", "aws-lora-7b", "--json",
                     "--artifacts-dir", str(tmp_path / "art"), "--", "python", "train.py"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 3 and summary["teardown"]["keptBuckets"] == ["gpulease-bucket"]
    assert backend.kept_buckets == [("gpulease-bucket",)] and STACK in backend.stacks
    # Its `if: always()` step, which runs after every run (.github/workflows/ephemeral-train.yml).
    cli.main(["ephemeral", "down", "--current-run", "--json"])
    capsys.readouterr()
    assert all("gpulease-bucket" in kept for kept in backend.kept_buckets), (
        f"a later destroy deleted the bucket the run kept: {backend.kept_buckets}"
    )


def test_a_kept_bucket_after_a_retried_destroy_reports_no_error() -> None:
    past = v.rfc3339(FIXED_NOW - timedelta(hours=1))
    backend = RecordingBackend(
        stacks={"ci-1-aaaaaaa": StackInfo("ci-1-aaaaaaa", FIXED_NOW - timedelta(hours=3), 14)},
        outputs_by_stack={"ci-1-aaaaaaa": {"deadline": past, "checkpointUri": "s3://ck-one/runs/x/"}},
        destroy_failures=1,
    )
    result = collect_garbage(backend, PlainProgress(io.StringIO()), now=FIXED_NOW, grace=timedelta(hours=1),
                             sleep=lambda s: None)
    [item] = result["collected"]
    teardown = item["teardown"]
    assert result["exitCode"] == 0 and teardown["destroyed"] is True and teardown["keptBuckets"] == ["ck-one"]
    assert teardown["error"] is None, "the second attempt succeeded: the teardown did not fail"
