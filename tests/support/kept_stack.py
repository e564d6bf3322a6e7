"""A stack kept with its checkpoint bucket, for ``ephemeral collect``: the ``kept`` fixture (moto's S3, the bucket
holding the job's artifacts, its result and another job's; the stand-in backend) and ``collect_kept``."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from moto import mock_aws

from gpulease import cli
from gpulease.cli import ephemeral, ephemeral_collect
from gpulease.ephemeral.backend import StackInfo
from gpulease.ephemeral.channel import BucketChannel
from tests.support.ephemeral import RecordingBackend

STACK = "ci-9001-0123456"
JOB = f"ckpt/_gpulease/jobs/{STACK}/artifacts/"
OUTPUTS = {"checkpointUri": "s3://kept-bkt/ckpt/", "availabilityZone": "eu-west-1b", "instanceId": "i-1"}


@pytest.fixture
def kept(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A stack kept with its bucket, the bucket holding the job's artifacts (and another job's)."""
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="kept-bkt")
        for key, body in (("metrics.json", b'{"loss": 1.2}'), ("ckpt/step-50.safetensors", b"weights")):
            client.put_object(Bucket="kept-bkt", Key=JOB + key, Body=body)
        client.put_object(Bucket="kept-bkt", Key="ckpt/_gpulease/jobs/ci-1-other/artifacts/theirs.txt", Body=b"no")
        # The job finished: its result, written last, is there (test_collect_needs_the_jobs_result.py: without it).
        client.put_object(Bucket="kept-bkt", Key=JOB.removesuffix("artifacts/") + "result.json",
                          Body=b'{"exitCode": 0, "finishedAt": "2026-12-01T10:00:00Z"}')
        backend = RecordingBackend(stacks={STACK: StackInfo(STACK, resource_count=9)},
                                   outputs_by_stack={STACK: dict(OUTPUTS)})
        opened: list[tuple[str, str]] = []
        monkeypatch.setattr(ephemeral, "BACKEND_FACTORY", lambda args: backend)
        monkeypatch.setattr(ephemeral_collect, "COLLECT_CHANNEL",
                            lambda cloud, region: opened.append((cloud, region)) or BucketChannel(client))
        yield {"client": client, "backend": backend, "opened": opened}


def collect_kept(*extra: str) -> int:
    return cli.main(["ephemeral", "collect", STACK, *extra])
