"""A resource registered by an apply run offline is captured however late in the render the apply's value turns out
unknown: at the end of a chain of applies, behind resources that resolve first, or inside a callback that the
offline run itself reaches through a known output. The SDK stops waiting once no output or call is outstanding;
the offline run must be tracked before that."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.review.engine import review
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

INSTANCE = "aws.ec2.Instance('gpu', instance_type='p4d.24xlarge', tags=tags)"
LATE = {
    # the unknown value is reached only after a bucket's registration resolves, then passes three applies
    "chain-behind-a-resource": "b = aws.s3.Bucket('b', tags=tags)\n"
        "late = b.id.apply(lambda i: U).apply(lambda v: v).apply(lambda v: [v])\n"
        f"late.apply(lambda v: v[0]).apply(lambda v: {INSTANCE})\n",
    # the offline run registers a bucket; its known id's apply reaches the unknown output again, whose callback
    # (run offline in turn) registers the instance
    "nested-through-a-known-output": "U.apply(lambda t: aws.s3.Bucket('b2', tags=tags).id.apply(\n"
        f"    lambda i: U.apply(lambda u: {INSTANCE})))\n",
    # a chain of all-applies over outputs that resolve one after another
    "all-of-resources": "b = aws.s3.Bucket('b', tags=tags)\nc = aws.s3.Bucket('c', tags=tags)\n"
        "pulumi.Output.all(b.id, c.id.apply(lambda i: U)).apply(lambda vs: vs[1]).apply(\n"
        f"    lambda v: {INSTANCE})\n",
}


@pytest.mark.parametrize("name", sorted(LATE))
def test_a_late_offline_registration_is_captured(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + LATE[name]))], now=FIXED_NOW)
    assert [x.name for x in r.rendering.of_type("aws:ec2/instance:Instance")] == ["gpu"], r.rendering.error
    assert "'gpu' was registered by an apply run offline with an unknown value" in str(r.rendering.error)
    assert r.exit_code != 0
