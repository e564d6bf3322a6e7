"""An ``Output.all`` that gathers a secret with plain values is secret as a whole, but only the secret part is one:
the review records each gathered output on its own (``gpulease/review/gathered.py``, ``GATHERING``), so the plain
part stays readable in every report and the secret is hidden."""

from __future__ import annotations

from pathlib import Path

from gpulease.review.engine import review
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW


def test_a_plain_part_gathered_with_a_secret_stays_unredacted(tmp_path: Path) -> None:
    body = (HEAD + "pair = pulumi.Output.all('team-ml-7a1', pulumi.Output.secret('s3cr3t-7a1'))\n"
            "aws.s3.Bucket('b', tags=tags)\npulumi.export('pair', pair)\n")
    [r] = review([str(_write(tmp_path, "gathered", body))], now=FIXED_NOW)
    assert r.rendering.error is None, r.rendering.error
    assert "s3cr3t-7a1" in r.rendering.secrets
    assert "team-ml-7a1" not in r.rendering.secrets
