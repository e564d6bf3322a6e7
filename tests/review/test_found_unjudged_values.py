"""Callbacks that register a GPU only for the real value, handed a value the offline review never reads: each
program must make the review partial (exit 3), never pass.

- ``run_with_unknowns=True`` (a parameter of ``Output.apply``): the SDK runs the callback at preview with the
  unknown marker, so the review neither runs it offline nor asks the static rule, though at ``pulumi up`` it runs
  with the real value;
- ``Output.from_input`` of a dict that holds a program function and an unknown output (also as a part of
  ``Output.all``): the apply's value is read as the bare unknown marker, so the function the callback calls at
  ``pulumi up`` is never walked;
- one callback applied to two outputs: it is run and judged once, with the first value; the second value (a
  program function among ``Output.all``'s known parts) is never read;
- an output awaited in a task the program schedules (``await output.future()``): no apply at all.
"""

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
    "apply-run-with-unknowns": MK + "U.apply(lambda t: mk(t), run_with_unknowns=True)\n",
    "apply-run-with-unknowns-positional": MK + "U.apply(lambda t: t).apply(lambda t: mk(t), True)\n",
    "from-input-dict-function-and-unknown": MK + "pulumi.Output.from_input({'f': mk, 'u': U})"
                                                 ".apply(lambda d: d['f'](d['u']))\n",
    "all-of-dict-function-and-unknown": MK + "pulumi.Output.all({'f': mk, 'u': U})"
                                             ".apply(lambda a: a[0]['f'](a[0]['u']))\n",
    # the same callback, first with harmless known parts, then with a program function among them
    "one-callback-two-values": MK + "cb = lambda a: a[0](a[1])\npulumi.Output.all(str, U).apply(cb)\n"
                                    "pulumi.Output.all(mk, U).apply(cb)\n",
    "output-future-in-task": MK + "import asyncio\nasync def go():\n    mk(await U.future())\n"
                                  "asyncio.ensure_future(go())\n",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_callback_registering_for_the_real_value_is_partial(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + PROGRAMS[name]))], now=FIXED_NOW)
    assert r.exit_code == 3, (r.exit_code, r.status, r.rendering.error)
