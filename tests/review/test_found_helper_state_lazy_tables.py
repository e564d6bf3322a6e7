"""What changes in an allowed module without the program replacing anything is no difference
(``gpulease/review/helper_state.py``): ``base64`` fills its Ascii85 and Base85 tables (``_a85chars``,
``_b85chars``, ``_b85dec``) the first time ``a85encode``, ``b85encode`` or ``b85decode`` runs, by rebinding module
globals that were ``None`` at import. A program that only calls ``base64.b85encode`` replaced nothing an allowed
helper runs with: a harmless apply stays judged, never partial."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.review.engine import review
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

CALLS = {
    "b85encode": "base64.b85encode(b'build-id')",
    "a85encode": "base64.a85encode(b'build-id')",
    "b85decode": "base64.b85decode(b'VPa')",
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_table_base64_fills_on_first_use_is_no_replacement(tmp_path: Path, name: str) -> None:
    body = (HEAD + f"import base64, json\nSUFFIX = {CALLS[name]}.decode()\naws.ec2.SecurityGroup('sg', tags=tags)\n"
            "pulumi.export('p', U.apply(lambda t: json.dumps({'name': t})))\n")
    [r] = review([str(_write(tmp_path, name, body))], now=FIXED_NOW)
    assert r.rendering.error is None and r.exit_code != 3, r.rendering.error
