"""docs/policies.md and ``gpulease/review/static_rule.py`` count plain data as harmless up to 100 items for each
``tuple``, ``list`` or ``dict`` and allow an ``import`` in a callback of a module on the allow-list. A callback that
reads a 60-entry lookup table (a region-to-AMI map) or does ``from json import dumps`` reaches nothing but plain
data and allowed helpers: it stays judged, never partial."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.review.engine import review
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

PROGRAMS = {
    "dict-of-60-entries": "AMIS = {f'region-{i}': f'ami-{i:017d}' for i in range(60)}\n"
                          "pulumi.export('ami', U.apply(lambda r: AMIS.get(r, 'ami-00000000000000000')))\n",
    "from-allowed-module-import": "def doc(v):\n    from json import dumps\n    return dumps({'name': v})\n"
                                  "pulumi.export('doc', U.apply(doc))\n",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_callback_reaching_only_plain_data_and_allowed_helpers_stays_judged(tmp_path: Path, name: str) -> None:
    body = HEAD + "aws.ec2.SecurityGroup('sg', tags=tags)\n" + PROGRAMS[name]
    [r] = review([str(_write(tmp_path, name, body))], now=FIXED_NOW)
    assert r.rendering.error is None and r.exit_code != 3, r.rendering.error
