"""A secret is never printed in another spelling either: a message that quotes it with repr() (a tab, a newline, a
backslash) or a markdown cell that escapes it (|) shows [secret]."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpulease.review import report
from gpulease.review.engine import review
from tests.review.test_unknown_compute import _write
from tests.support.clock import FIXED_NOW

BODY = ("import pulumi, pulumi_aws as aws\nV = {v!r}\nS = pulumi.Output.secret\n"
        "aws.ec2.Instance('gpu', instance_type='p4d.24xlarge', ami='ami-0123456789abcdef0',\n"
        "    tags={{'gpulease:owner': S(V), 'gpulease:expires-at': S(V), 'Name': S(V)}})\n")


@pytest.mark.parametrize("value", ["tab\tsecretpart", "nl\nsecretpart", "bs\\secretpart", "pipe|secretpart"])
def test_secret_never_printed(tmp_path: Path, value: str) -> None:
    [r] = review([str(_write(tmp_path, "s", BODY.format(v=value)))], now=FIXED_NOW)
    printed = report.markdown([r]) + json.dumps(report.to_json([r]))
    assert "secretpart" not in printed
