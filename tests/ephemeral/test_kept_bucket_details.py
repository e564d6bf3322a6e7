"""The details that decide what a kept bucket is and where ``ephemeral collect`` reaches it:

- ``collect --region`` opens the bucket in the region given, whatever the stack's outputs say; without an
  ``availabilityZone`` output, AWS falls back to ``AWS_REGION``; a zone of no known region asks for ``--region``.
- What is kept with a bucket: the resources of its module that need it, also through ``propertyDependencies``
  (an input that reads the bucket's output), and never another bucket that happens to depend on it.
- A destroy that failed, then on its retry finds the stack already gone, is over: no error is reported.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from gpulease.cli import ephemeral_collect
from gpulease.core.errors import UserError
from gpulease.ephemeral.backend import StackMissingError, all_but_buckets
from gpulease.ephemeral.progress import PlainProgress
from gpulease.ephemeral.teardown import teardown
from tests.support.ephemeral import RecordingBackend
from tests.support.kept_stack import collect_kept


def test_collect_uses_the_region_given(kept, tmp_path: Path, capsys) -> None:
    assert collect_kept("--artifacts-dir", str(tmp_path / "art"), "--region", "ap-south-1", "--json") == 0
    assert kept["opened"] == [("aws", "ap-south-1")]


@pytest.mark.parametrize(("zone", "region"), [
    ("us-east-1a", "us-east-1"), ("us-east-1-bos-1a", "us-east-1"), ("us-gov-west-1a", "us-gov-west-1"),
    ("ap-southeast-4b", "ap-southeast-4"), ("cn-north-1a", "cn-north-1"),
])
def test_an_aws_zone_names_its_own_region(zone: str, region: str) -> None:
    assert ephemeral_collect.bucket_region({"availabilityZone": zone}, "aws") == region


def test_a_zone_is_in_the_longest_region_its_name_starts_with(monkeypatch: pytest.MonkeyPatch) -> None:
    # Alibaba Cloud's finance regions (cn-shanghai-finance-1) start with the name of a public one.
    rules = ephemeral_collect.SPEC_RULES["alicloud"]
    monkeypatch.setattr(rules, "regions", (*rules.regions, "cn-shanghai-finance-1"))
    assert ephemeral_collect.bucket_region({"availabilityZone": "cn-shanghai-finance-1z"}, "alicloud") == (
        "cn-shanghai-finance-1")
    assert ephemeral_collect.bucket_region({"availabilityZone": "cn-shanghai-b"}, "alicloud") == "cn-shanghai"


def test_without_a_zone_aws_falls_back_to_aws_region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.setenv("AWS_REGION", "eu-north-1")
    assert ephemeral_collect.bucket_region({}, "aws") == "eu-north-1"
    monkeypatch.delenv("AWS_REGION")
    with pytest.raises(UserError, match="--region"):
        ephemeral_collect.bucket_region({}, "aws")


@pytest.mark.parametrize(("zone", "cloud"), [("xx-nowhere-9z", "aws"), ("us-east-10a", "aws"), ("mars-1a", "alicloud")])
def test_a_zone_of_no_known_region_asks_for_region(zone: str, cloud: str) -> None:
    with pytest.raises(UserError, match="give --region"):
        ephemeral_collect.bucket_region({"availabilityZone": zone}, cloud)


URN = "urn:pulumi:ci::gpulease::{}::{}"


def _resource(kind: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"urn": URN.format(kind, name), "type": kind, "outputs": fields.pop("outputs", {}), **fields}


def test_a_setting_bound_only_by_its_property_dependencies_is_kept() -> None:
    bucket = _resource("aws:s3/bucketV2:BucketV2", "ck", outputs={"bucket": "ck", "id": "ck"})
    policy = _resource("aws:s3/bucketPolicy:BucketPolicy", "ck-policy",
                       propertyDependencies={"bucket": [bucket["urn"]]})
    instance = _resource("aws:ec2/instance:Instance", "gpu")
    target = all_but_buckets([bucket, policy, instance], ("ck",))
    assert target == [instance["urn"]], "the bucket's policy is kept with it, the instance destroyed"


def test_another_bucket_that_depends_on_the_kept_one_is_not_kept() -> None:
    bucket = _resource("aws:s3/bucketV2:BucketV2", "ck", outputs={"bucket": "ck", "id": "ck"})
    logs = _resource("aws:s3/bucketV2:BucketV2", "logs", outputs={"bucket": "logs", "id": "logs"},
                     dependencies=[bucket["urn"]])
    target = all_but_buckets([bucket, logs], ("ck",))
    assert target == [logs["urn"]]


class GoneOnRetry(RecordingBackend):
    def destroy(self, stack: str, on_output: Any, on_resource: Any, *, keep_buckets: tuple[str, ...] = ()) -> Any:
        self.calls.append(("destroy", stack))
        if self.ops().count("destroy") == 1:
            raise RuntimeError("RequestTimeout")
        raise StackMissingError(stack)


def test_a_retried_destroy_that_finds_the_stack_gone_reports_no_error() -> None:
    # Keeping a bucket, the teardown ends with the destroy (no remove that would clear the error on its own).
    result = teardown(GoneOnRetry(), "ci-1-aaaaaaa", PlainProgress(io.StringIO()), sleep=lambda s: None,
                      keep_buckets=("ck",))
    assert result.destroyed and result.error is None, result
