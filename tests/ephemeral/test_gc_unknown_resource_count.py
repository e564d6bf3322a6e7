"""``ephemeral gc`` keeps the checkpoint bucket of a stack whose resource count the backend does not report.

``pulumi stack ls --json`` omits ``resourceCount`` when it does not know it (the Automation API's
``StackSummary.resource_count`` is then ``None``): that is not a stack without resources. gc reads the outputs of such
a stack, as ``ephemeral down`` does, and keeps the buckets they name; only a count of 0 holds nothing to keep.
"""

from __future__ import annotations

import io
from datetime import timedelta

from gpulease.core import vocabulary as v
from gpulease.ephemeral.backend import StackInfo
from gpulease.ephemeral.gc import collect_garbage
from gpulease.ephemeral.progress import PlainProgress
from tests.support.clock import FIXED_NOW
from tests.support.ephemeral import RecordingBackend

NOW, GRACE = FIXED_NOW, timedelta(hours=1)


def test_gc_keeps_the_bucket_of_a_stack_whose_resource_count_is_unknown() -> None:
    past = v.rfc3339(NOW - timedelta(hours=1))
    backend = RecordingBackend(
        stacks={"ci-1-aaaaaaa": StackInfo("ci-1-aaaaaaa", NOW - timedelta(hours=3), None)},
        outputs_by_stack={"ci-1-aaaaaaa": {"deadline": past, "checkpointUri": "s3://ck-one/runs/x/"}},
    )
    result = collect_garbage(backend, PlainProgress(io.StringIO()), now=NOW, grace=GRACE, sleep=lambda s: None)
    destroyed = [s for op, s in backend.calls if op == "destroy"]
    assert destroyed == ["ci-1-aaaaaaa"], "the stack past its deadline is destroyed (its instance stops billing)"
    assert backend.kept_buckets == [("ck-one",)], (
        f"the bucket its outputs name is kept (it may hold the only copy of the job's artifacts): {result}")
