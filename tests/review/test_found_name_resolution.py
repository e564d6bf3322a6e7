"""The static rule resolves a name the way a plain dict lookup does, but the interpreter resolves it through the
objects the function really runs with: a module whose class has a property of the allowed name, the
``__import__`` of the builtins a function captured, a globals or builtins mapping of a dict subclass
(``__getitem__``/``__missing__``: ``LOAD_GLOBAL`` takes the slow path for non-exact dicts). Each program
registers a GPU at ``pulumi up`` for the real value: the review must be partial (exit 3), never pass."""

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
    "module-class-property": MK + "import json, types\n_d = json.dumps\nclass JM(types.ModuleType):\n"
                                  "    @property\n    def dumps(self):\n"
                                  "        return lambda o, **k: (mk(o), _d(o, **k))[1]\n"
                                  "json.__class__ = JM\nU.apply(lambda t: json.dumps(t))\n",
    "captured-builtins-import": MK + "import builtins, types\n_imp = builtins.__import__\n"
                                     "FJ = types.SimpleNamespace(dumps=lambda o: mk(o))\n"
                                     "def imp(name, *a, **k):\n    return FJ if name == 'json' else _imp(name, *a, **k)\n"
                                     "__builtins__ = {**vars(builtins), '__import__': imp}\n"
                                     "def cb(t):\n    import json\n    return json.dumps(t)\n"
                                     "__builtins__ = builtins\nU.apply(cb)\n",
    "captured-builtins-dict-subclass": MK + "import builtins\nclass B(dict):\n    def __getitem__(self, k):\n"
                                            "        return mk if k == 'len' else dict.__getitem__(self, k)\n"
                                            "__builtins__ = B(vars(builtins))\ncb = lambda t: len(t)\n"
                                            "__builtins__ = builtins\nU.apply(cb)\n",
    "globals-dict-subclass-missing": MK + "import types, builtins\nclass G(dict):\n    def __missing__(self, k):\n"
                                          "        return mk if k == 'len' else getattr(builtins, k)\n"
                                          "cb0 = lambda t: len(t)\n"
                                          "U.apply(types.FunctionType(cb0.__code__, G(__builtins__=builtins)))\n",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_callback_registering_for_the_real_value_is_partial(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + PROGRAMS[name]))], now=FIXED_NOW)
    assert r.exit_code == 3, (r.exit_code, r.status, r.rendering.error)
