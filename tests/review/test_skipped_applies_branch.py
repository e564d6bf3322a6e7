"""A skipped apply whose callback registers GPU compute only for some values never passes: the offline run with the
unknown marker takes the other branch and registers nothing, so the static rule (the callback may register) still
decides."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.review.engine import review
from tests.review.test_unknown_compute import _write
from tests.support.clock import FIXED_NOW

HEAD = ("import pulumi, pulumi_aws as aws, json\n"
        "U = pulumi.StackReference('acme/infra/prod').get_output('x')\n")
GPU = "aws.ec2.Instance('gpu', instance_type='p4d.24xlarge')"

PROGRAMS = {
    "equality-branch": f"def cb(env):\n    if env == 'prod':\n        {GPU}\nU.apply(cb)\n",
    "json-try-except": ("def cb(raw):\n    try:\n        cfg = json.loads(raw)\n    except ValueError:\n        return None\n"
                        "    aws.ec2.Instance('gpu', instance_type=cfg['type'])\nU.apply(cb)\n"),
    "output-all-shape": f"pulumi.Output.all(U, U).apply(lambda a: {GPU} if isinstance(a, list) else None)\n",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_conditional_gpu_in_skipped_apply_never_passes(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + PROGRAMS[name]))], now=FIXED_NOW)
    assert r.exit_code != 0

