"""The line an unknown apply is reported at is the line of the ``apply`` call, read when it is called: by the time
the review learns the value is unknown, the calling frame has moved on (or finished), so its current line is
another one."""

from __future__ import annotations

from pathlib import Path

from gpulease.review.engine import review
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

FIRST = HEAD.count("\n") + 1
# A function calls two applies on an unknown output, then runs on and returns; the module runs on after it.
BODY = (
    "def setup():\n"                                                                          # FIRST
    "    U.apply(lambda t: aws.ec2.Instance('gpu', instance_type='p4d.24xlarge', tags=tags))\n"  # FIRST + 1
    "    later = 1\n"
    "    U.apply(lambda t: aws.ec2.Instance(t if False else 'gpu2', instance_type='p4d.24xlarge', tags=tags))\n"  # +3
    "    later += 1\n"
    "    return later\n"
    "setup()\n"
    "done = [i for i in range(3)]\n"
    "pulumi.export('done', len(done))\n"
)


def test_the_reported_line_is_the_apply_call(tmp_path: Path) -> None:
    [r] = review([str(_write(tmp_path, "apply-lines", HEAD + BODY))], now=FIXED_NOW)
    error = str(r.rendering.error)
    assert r.exit_code != 0
    assert f"'gpu' was registered by an apply run offline with an unknown value (at __main__.py:{FIRST + 1})" in error
    assert f"'gpu2' was registered by an apply run offline with an unknown value (at __main__.py:{FIRST + 3})" in error


def test_a_skipped_apply_that_registers_nothing_names_its_call_line(tmp_path: Path) -> None:
    body = (
        "def setup():\n"                                                                               # FIRST
        "    U.apply(lambda t: aws.ec2.Instance('gpu', instance_type='p4d.24xlarge') if t == 'prod' else None)\n"
        "    later = 1\n"
        "    return later\n"
        "setup()\n"
        "aws.s3.Bucket('b', tags=tags)\n"
    )
    [r] = review([str(_write(tmp_path, "apply-unseen-line", HEAD + body))], now=FIXED_NOW)
    assert f"an apply on a value unknown offline was not run (at __main__.py:{FIRST + 1})" in str(r.rendering.error)
