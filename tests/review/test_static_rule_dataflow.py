"""The static rule reads what reaches a callback, not only its code: callbacks that register a GPU only for the real value yet pass (exit 0),
and an ordinary Config global read in a callback that makes the review partial (a false alarm)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.review.engine import review
from tests.review.test_skipped_applies_offline import GPU
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

MK = f"def mk(t):\n    if t == 'prod':\n        {GPU}\n"
PROGRAMS = {
    # a program function handed to the callback as a known part of Output.all: the value is never walked
    "all-function-part": MK + "pulumi.Output.all(mk, U).apply(lambda a: a[0](a[1]))\n",
    "all-function-in-dict": MK + "pulumi.Output.all(pulumi.Output.from_input({'f': mk}), U)"
                                 ".apply(lambda a: a[0]['f'](a[1]))\n",
    "all-object-get": "class R:\n    def get(self, t):\n        if t == 'prod':\n            " + GPU
                      + "\npulumi.Output.all(R(), U).apply(lambda a: a[0].get(a[1]))\n",
    "all-object-eq": "class E:\n    def __eq__(self, t):\n        if t == 'prod':\n            " + GPU
                     + "\n        return False\npulumi.Output.all(E(), U).apply(lambda a: a[0] == a[1])\n",
    # the function's builtins are captured when it is made; the rule reads the module's __builtins__ now
    "builtins-swapped-back": MK + "import builtins\n__builtins__ = {**vars(builtins), 'len': mk}\n"
                                  "cb = lambda t: len(t)\n__builtins__ = builtins\nU.apply(cb)\n",
    # a getter called on a Config the callback makes is never checked by identity
    "config-getter-patched": MK + "pulumi.Config.get = lambda self, k, *a, **kw: mk(k)\n"
                                  "U.apply(lambda t: pulumi.Config().get(t))\n",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_callback_registering_for_the_real_value_is_partial(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + PROGRAMS[name]))], now=FIXED_NOW)
    assert r.exit_code == 3, (r.exit_code, r.rendering.error)


def test_a_config_global_read_in_a_callback_stays_judged(tmp_path: Path) -> None:
    body = HEAD + "aws.s3.Bucket('b', tags=tags)\ncfg = pulumi.Config()\npulumi.export('p', U.apply(lambda t: cfg.get('x')))\n"
    [r] = review([str(_write(tmp_path, "cfg-global", body))], now=FIXED_NOW)
    assert r.status != "partial" and r.exit_code != 3, r.rendering.error
