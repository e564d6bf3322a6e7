"""A callback skipped at preview that registers a GPU only for the real value, reached through an object the static
rule counts harmless without reading what it holds: the review passes (exit 0) where it must be partial (exit 3)."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from gpulease.review.engine import review
from tests.review.test_skipped_applies_offline import GPU
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

MK = f"def mk():\n    return {GPU}\n"
PROGRAMS = {
    "allowed-module-attr-reassigned": MK + "import json\njson.dumps = lambda v: mk() if v == 'prod' else ''\n"
                                           "U.apply(lambda t: json.dumps(t))\n",
    "json-decoder-object-hook": MK + "import json\n"
                                     "DEC = json.JSONDecoder(object_hook=lambda d: mk() if d.get('env') == 'prod' else d)\n"
                                     "U.apply(lambda t: DEC.decode(t))\n",
    "json-encoder-default": MK + "import json\nENC = json.JSONEncoder(default=lambda o: mk())\n"
                                 "U.apply(lambda t: ENC.encode([object()]) if t == 'prod' else None)\n",
    "bound-dict-get": MK + "GET = {'prod': mk}.get\nU.apply(lambda t: GET(t, lambda: None)())\n",
    "mappingproxy": MK + "import types\nMAKERS = types.MappingProxyType({'prod': mk})\n"
                         "U.apply(lambda t: MAKERS.get(t, lambda: None)())\n",
    "dict-values-view": MK + "VALS = {'prod': mk}.values()\nU.apply(lambda t: [f() for f in VALS if t == 'prod'])\n",
    "list-iterator": MK + "IT = iter([mk])\nU.apply(lambda t: next(IT)() if t == 'prod' else None)\n",
    "generator-send": MK + "def gen():\n    t = yield\n    while True:\n        if t == 'prod':\n            mk()\n"
                           "        t = yield\nG = gen(); next(G)\nU.apply(lambda t: G.send(t))\n",
    "dict-subclass-missing": MK + "class Reg(dict):\n    def __missing__(self, k):\n        return mk() if k == 'prod' else None\n"
                                  "R = Reg()\nU.apply(lambda t: R[t])\n",
    "str-subclass-method": MK + "class Name(str):\n    def upper(self):\n        return mk()\n"
                                "N = Name('x')\nU.apply(lambda t: N.upper() if t == 'prod' else None)\n",
    "class-module-spoofed": "class Maker:\n    def __init__(self, t):\n        if t == 'prod':\n            " + GPU
                            + "\nMaker.__module__ = 'json'\nU.apply(lambda t: Maker(t))\n",
    "class-attribute-list": MK + "class C:\n    MAKERS = [mk]\n    @classmethod\n    def go(cls, t):\n"
                                 "        return [f() for f in cls.MAKERS] if t == 'prod' else None\nU.apply(lambda t: C.go(t))\n",
    "metaclass-call": MK + "class Meta(type):\n    def __call__(cls, t):\n        return mk() if t == 'prod' else None\n"
                           "class C(metaclass=Meta):\n    def x(self):\n        pass\nU.apply(lambda t: C(t))\n",
    "output-attribute": MK + "K = pulumi.Output.from_input(1)\nK.maker = mk\n"
                             "U.apply(lambda t: K.maker() if t == 'prod' else None)\n",
    "slots-instance": MK + "class H:\n    __slots__ = ('f',)\n    def __init__(self, f):\n        self.f = f\n"
                           "    def go(self, t):\n        return self.f() if t == 'prod' else None\nO = H(mk)\n"
                           "U.apply(lambda t: O.go(t))\n",
    "exec-with-allowed-module-name": "G = {'__name__': 'json', 'aws': aws, 'tags': tags, 'MD': MD}\n"
                                     "exec(\"def cb(t):\\n    if t == 'prod':\\n        " + GPU.replace("'", "\\'")
                                     + "\\n\", G)\nU.apply(G['cb'])\n",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_callback_registering_for_the_real_value_is_partial(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + PROGRAMS[name]))], now=FIXED_NOW)
    assert r.exit_code == 3, (r.exit_code, r.rendering.error)


HARMLESS = {
    # the reviewer's list of callbacks that reach only allowed callables and plain values: they stay judged
    "json-dumps-dict": "import json\npulumi.export('p', U.apply(lambda t: json.dumps({'name': t, 'n': 1})))\n",
    "f-string": "pulumi.export('p', U.apply(lambda t: f'{t}-x'))\n",
    "dash-join": "pulumi.export('p', U.apply(lambda t: '-'.join([t, 'x'])))\n",
    "join-sorted": "pulumi.export('p', U.apply(lambda ids: ','.join(sorted(ids))))\n",
    "all-format": "pulumi.export('p', pulumi.Output.all(U, U).apply(lambda a: '{}-{}'.format(*a)))\n",
    "sha256-hexdigest": "import hashlib\npulumi.export('p', U.apply(lambda t: hashlib.sha256(t.encode()).hexdigest()))\n",
    "output-concat": "pulumi.export('p', U.apply(lambda t: pulumi.Output.concat('a-', t)))\n",
    "helper-json-tags": ("import json\nTAGS = {'team': 'ml', 'cost': 'r'}\ndef doc(t):\n"
                         "    return json.dumps({'name': t, **TAGS})\npulumi.export('p', U.apply(lambda t: doc(t)))\n"),
    "import-inside": "def f(t):\n    import json\n    return json.dumps(t)\npulumi.export('p', U.apply(f))\n",
}


@pytest.mark.parametrize("name", sorted(HARMLESS))
def test_a_callback_reaching_only_allowed_objects_stays_judged(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + "aws.s3.Bucket('b', tags=tags)\n" + HARMLESS[name]))],
                 now=FIXED_NOW)
    assert r.rendering.error is None and r.status != "partial" and r.exit_code != 3, r.rendering.error


def test_identity_not_name_decides_an_allowed_callable() -> None:
    import json

    from gpulease.review.static_rule import may_register

    assert not may_register(json.dumps) and not may_register(lambda t: json.dumps(t))
    fake = types.FunctionType(compile("lambda v: v", "<string>", "eval").co_consts[0], {"__name__": "json"}, "dumps")
    fake.__module__ = "json"
    assert may_register(fake)
    assert may_register(lambda t: undefined_name(t))  # type: ignore[name-defined]  # noqa: F821
    assert may_register(lambda t: STR_SUBCLASS.upper())
    assert not may_register(lambda t: PLAIN.upper())
    assert may_register(lambda t: t.register_gpu()) and not may_register(lambda t: t.upper())


class _Name(str):
    pass


STR_SUBCLASS = _Name("x")
PLAIN = "x"


def _imports_a_module(t: str) -> str:
    import os  # noqa: F401  # an import runs the module's code (a program module may register at import)

    return t


def test_an_import_of_a_module_off_the_allow_list_may_register() -> None:
    from gpulease.review.static_rule import may_register

    assert may_register(_imports_a_module)
