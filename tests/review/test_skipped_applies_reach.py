"""A callback skipped at preview that registers a GPU only for the real value, reached in a way the static rule
does not read (a program class, a default argument, a dict of functions, importlib, an inner apply on the marker
made known): the review passes (exit 0, "0 resources") where it must be partial."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.review.engine import review
from tests.review.test_skipped_applies_offline import GPU
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

PROGRAMS = {
    "program-class": f"class Maker:\n    def make(self, t):\n        if t == 'prod':\n            {GPU}\n"
                     "U.apply(lambda t: Maker().make(t))\n",
    "default-argument": f"def mk():\n    {GPU}\nU.apply(lambda t, mk=mk: mk() if t == 'prod' else None)\n",
    "dict-of-functions": f"def mk():\n    {GPU}\nMAKERS = {{'prod': mk}}\nU.apply(lambda t: MAKERS.get(t, lambda: None)())\n",
    "importlib": ("import importlib\ndef cb(t):\n    if t == 'prod':\n        aws = importlib.import_module('pulumi_aws')\n"
                  f"        {GPU}\nU.apply(cb)\n"),
    "inner-apply-on-marker": f"U.apply(lambda t: pulumi.Output.from_input(t).apply(lambda v: {GPU} if v == 'prod' else None))\n",
    "inner-apply-on-known": f"K = pulumi.Output.from_input('k')\nU.apply(lambda t: K.apply(lambda k: {GPU} if t == 'prod' else None))\n",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_callback_registering_for_the_real_value_is_partial(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + PROGRAMS[name]))], now=FIXED_NOW)
    assert r.exit_code == 3, (r.exit_code, r.rendering.error)
