"""Callbacks that register a GPU only for the real value are judged on every value they are handed: each program
makes the review partial (exit 3), never passes.

- ``run_with_unknowns=True`` (a parameter of ``Output.apply``, also positional): the SDK runs the callback at
  preview with the unknown marker; when it registers nothing, the static rule decides, as for any apply on an
  unknown value;
- ``Output.from_input`` of a dict that holds a program function and an unknown output (also as a part of
  ``Output.all``): the callback is handed the dict, its known values as they are, so the function it calls at
  ``pulumi up`` is walked;
- one callback applied to two outputs: each value is judged, the second (a program function among
  ``Output.all``'s known parts) too;
- an output awaited in a task the program schedules (``await output.future()``): no apply at all, the await itself
  is seen.

Callbacks that reach nothing that registers stay judged harmless (no partial review from the same forms).
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


HARMLESS = {
    "apply-run-with-unknowns-plain": "U.apply(lambda t: str(t).upper(), run_with_unknowns=True)\n",
    "all-run-with-unknowns-plain": "pulumi.Output.all('x', U).apply(lambda a: a[0] + str(a[1]), True)\n",
    # a known value: the SDK runs the callback as at update
    "apply-run-with-unknowns-known": MK + "pulumi.Output.from_input('dev').apply(lambda t: mk(t), True)\n",
    "from-input-nested-plain": "pulumi.Output.from_input({'a': 'x', 'u': [U, ('y', U)]})"
                               ".apply(lambda d: d['a'] + str(d['u']))\n",
    "one-callback-two-plain-values": "cb = lambda a: str(a[0]) + str(a[1])\npulumi.Output.all('x', U).apply(cb)\n"
                                     "pulumi.Output.all(1, U).apply(cb)\n",
    # the SDK's own run_with_unknowns apply (from_input of an output) calls no callback of the program
    "gathered-function-never-applied": MK + "x = pulumi.Output.all(pulumi.Output.all(mk, U))\n",
}
MORE = {
    "from-input-tuple": MK + "pulumi.Output.from_input((mk, U)).apply(lambda d: d[0](d[1]))\n",
    "from-input-nested": MK + "pulumi.Output.from_input({'a': [{'f': mk}], 'u': U})"
                              ".apply(lambda d: d['a'][0]['f'](d['u']))\n",
    "all-run-with-unknowns": MK + "pulumi.Output.all(mk, U).apply(lambda a: a[0](a[1]), run_with_unknowns=True)\n",
    # a part skipped at preview: the SDK hands the callback Output.UNKNOWN for it, the known parts as they are
    "all-run-with-unknowns-collapsed": MK + "pulumi.Output.all(mk, U.apply(lambda t: t))"
                                            ".apply(lambda a: a[0](a[1]), run_with_unknowns=True)\n",
}


@pytest.mark.parametrize("name", sorted(MORE))
def test_known_parts_nested_in_the_inputs_are_judged(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + MORE[name]))], now=FIXED_NOW)
    assert r.exit_code == 3, (r.exit_code, r.status, r.rendering.error)
    assert "an apply on a value unknown offline was not run (at __main__.py:" in (r.rendering.error or "")


@pytest.mark.parametrize("name", sorted(HARMLESS))
def test_a_harmless_callback_on_those_values_stays_harmless(tmp_path: Path, name: str) -> None:
    body = HEAD + "aws.s3.Bucket('b', tags=tags)\n" + HARMLESS[name]
    [r] = review([str(_write(tmp_path, name, body))], now=FIXED_NOW)
    assert r.rendering.error is None and r.status != "partial" and r.exit_code != 3, r.rendering.error
