"""The summary's line for a kept checkpoint bucket says what the bucket is: its lifecycle rule expires the objects
under the checkpoint prefix, the job's artifacts not collected included, after the spec's ``keepDays``; it bills at
its own cloud's storage price; and a user's own bucket (``checkpoints.bucket``) is never said to be deleted."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from gpulease.ephemeral.progress import kept_terms, print_summary

STACK = "ci-1-aaaaaaa"


def _line(terms: dict[str, Any]) -> str:
    out = io.StringIO()
    print_summary({"stack": STACK, "teardown": {"keptBuckets": ["ck"], "destroyed": True}, "checkpointBucket": terms,
                   "artifacts": [], "resources": {}}, Console(file=out, width=400))
    return " ".join(out.getvalue().split())


def test_the_line_names_the_expiry_of_the_uncollected_artifacts() -> None:
    line = _line({"cloud": "aws", "expireDays": 12, "existing": False})
    assert f"_gpulease/jobs/{STACK}/artifacts/" in line and "12 days" in line


@pytest.mark.parametrize(("cloud", "price", "other"), [("aws", "S3 Standard", "OSS"), ("alicloud", "OSS", "S3")])
def test_the_price_is_the_buckets_own_clouds(cloud: str, price: str, other: str) -> None:
    text = kept_terms(STACK, {"cloud": cloud, "expireDays": 30, "existing": False})
    assert price in text and other not in text
    assert f"down {STACK} --with-buckets` deletes it" in text


def test_a_users_own_bucket_is_never_said_to_be_deleted() -> None:
    text = kept_terms(STACK, {"cloud": "aws", "expireDays": None, "existing": True})
    assert "--with-buckets" not in text and "never the bucket" in text
