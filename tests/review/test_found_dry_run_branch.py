"""``pulumi.runtime.is_dry_run()`` is true while the review renders (a preview) and false during ``pulumi up``'s
update: a program that creates a GPU only when it is false registers it at update and never offline. Reading it
must make the review partial (exit 3), never pass."""

from __future__ import annotations

from pathlib import Path

from gpulease.review.engine import review
from tests.review.test_skipped_applies_offline import GPU
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW


def test_a_gpu_created_only_outside_preview_is_partial(tmp_path: Path) -> None:
    body = HEAD + "aws.s3.Bucket('b', tags=tags)\nif not pulumi.runtime.is_dry_run():\n    " + GPU + "\n"
    [r] = review([str(_write(tmp_path, "dry-run-branch", body))], now=FIXED_NOW)
    assert r.exit_code == 3, (r.exit_code, r.status, r.rendering.error)
