"""An allowed helper is allowed by its identity, but what it calls is read at call time from module state the
program can replace (``json._default_encoder``, ``base64.binascii``, ``re._compile``, ``pulumi.log._log``,
``pulumi.Config.full_key``, ...). A program that replaced such state, and whose callback calls only the allowed
helper, registers a GPU at ``pulumi up`` for the real value: the review must be partial (exit 3), never pass.
The state is noted once, when the review is imported, and compared once per render
(``gpulease/review/helper_state.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpulease.review import helper_state
from gpulease.review.engine import review
from gpulease.review.render import render
from tests.review.test_skipped_applies_offline import GPU
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

MK = f"def mk(t):\n    if t == 'prod':\n        {GPU}\n"
PROGRAMS = {
    "json-dumps-default-encoder": MK + "import json\nclass E(json.JSONEncoder):\n    def encode(self, o):\n"
                                       "        mk(o)\n        return super().encode(o)\njson._default_encoder = E()\n"
                                       "U.apply(lambda t: json.dumps(t))\n",
    "json-loads-default-decoder": MK + "import json\nclass D(json.JSONDecoder):\n    def decode(self, s, *a):\n"
                                       "        mk(s.strip('\"'))\n        return super().decode(s)\n"
                                       "json._default_decoder = D()\nU.apply(lambda t: json.loads(t))\n",
    "base64-binascii": MK + "import base64, binascii, types\n"
                            "base64.binascii = types.SimpleNamespace(b2a_base64=lambda s, newline=True: "
                            "(mk(s.decode()), binascii.b2a_base64(s, newline=newline))[1])\n"
                            "U.apply(lambda t: base64.b64encode(t.encode()))\n",
    "re-compile": MK + "import re\n_c = re._compile\ndef comp(p, f):\n    mk(p)\n    return _c(p, f)\n"
                       "re._compile = comp\nU.apply(lambda t: re.sub(t, '', 'x'))\n",
    "textwrap-whitespace-re": MK + "import textwrap, types\nW = textwrap._whitespace_only_re\n"
                                   "textwrap._whitespace_only_re = types.SimpleNamespace(sub=lambda r, s: "
                                   "(mk(s), W.sub(r, s))[1])\nU.apply(lambda t: textwrap.dedent(t))\n",
    "log-info-internal": MK + "pulumi.log._log = lambda engine, sev, msg, *a: mk(msg)\n"
                              "U.apply(lambda t: pulumi.log.info(t))\n",
    "config-full-key": MK + "_fk = pulumi.Config.full_key\n"
                            "pulumi.Config.full_key = lambda self, k: (mk(k), _fk(self, k))[1]\n"
                            "U.apply(lambda t: pulumi.Config().get(t))\n",
    "config-get-config": MK + "import pulumi.config as pc\n_g = pc.get_config\n"
                              "pc.get_config = lambda k: (mk(k.split(':')[-1]), _g(k))[1]\n"
                              "U.apply(lambda t: pulumi.Config().get(t))\n",
    "config-init": MK + "_i = pulumi.Config.__init__\ndef init(self, name=None):\n    mk(name)\n    _i(self, name)\n"
                        "pulumi.Config.__init__ = init\nU.apply(lambda t: pulumi.Config(t))\n",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_callback_registering_for_the_real_value_is_partial(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + PROGRAMS[name]))], now=FIXED_NOW)
    assert r.exit_code == 3, (r.exit_code, r.status, r.rendering.error)


def test_the_replaced_value_is_named(tmp_path: Path) -> None:
    [r] = review([str(_write(tmp_path, "named", HEAD + PROGRAMS["re-compile"]))], now=FIXED_NOW)
    assert "the program replaced re._compile" in r.rendering.error


def test_a_replacement_is_found_and_a_trusted_stand_in_is_none() -> None:
    original = json._default_encoder
    stand_in = json.JSONEncoder()
    json._default_encoder = stand_in
    try:
        assert helper_state.replaced({}) == "json._default_encoder"
        assert helper_state.replaced({id(stand_in): stand_in}) is None  # the review's own stand-in
    finally:
        json._default_encoder = original
    assert helper_state.replaced({}) is None


def test_a_warning_noted_in_a_helper_module_is_no_replacement() -> None:
    """``warnings`` notes a warning it showed in the module that raised it (``__warningregistry__``), added or
    replaced while anything runs: no helper calls through it."""
    import json.decoder

    had = json.decoder.__dict__.pop("__warningregistry__", None)
    try:
        json.decoder.__dict__.setdefault("__warningregistry__", {})  # as warnings.warn does at a warning's site
        assert "__warningregistry__" in json.decoder.__dict__
        assert helper_state.replaced({}) is None
        json.decoder.__dict__["__warningregistry__"] = {}
        assert helper_state.replaced({}) is None
    finally:
        json.decoder.__dict__.pop("__warningregistry__", None)
        if had is not None:
            json.decoder.__warningregistry__ = had


def test_a_module_whose_class_is_swapped_is_found() -> None:
    class Module(type(json)):
        pass

    json.__class__ = Module
    try:
        assert helper_state.replaced({}) == "json.__class__"
    finally:
        json.__class__ = type(helper_state)
    assert helper_state.replaced({}) is None


def test_a_submodule_imported_later_or_a_cache_filled_is_no_replacement(tmp_path: Path) -> None:
    body = (HEAD + "import json.tool, re\nre.sub('a+', '', 'aab')\naws.s3.Bucket('b', tags=tags)\n"
            "pulumi.export('p', U.apply(lambda t: json.dumps(re.sub('x', '', t))))\n")
    [r] = review([str(_write(tmp_path, "submodule", body))], now=FIXED_NOW)
    assert r.rendering.error is None and r.exit_code != 3, r.rendering.error


def test_the_state_is_compared_once_per_render(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    compare = helper_state.replaced
    monkeypatch.setattr(helper_state, "replaced", lambda trusted: calls.append(trusted) or compare(trusted))
    applies = "".join(f"pulumi.export('p{i}', U.apply(lambda t: json.dumps(t)))\n" for i in range(5))
    program = _write(tmp_path, "five", HEAD + "import json\naws.s3.Bucket('b', tags=tags)\n" + applies)
    rendering = render({"aws:region": "us-east-1"}, stack="test", project="five", program_path=program / "__main__.py",
                       now=FIXED_NOW)
    assert rendering.error is None and not rendering.unseen, rendering.error
    assert len(calls) == 1


def test_a_replacement_with_no_callback_judged_harmless_is_no_partial(tmp_path: Path) -> None:
    """The replacement only matters through a callback the rule judged unable to register: a program that sets
    its own default encoder and has no apply on a value unknown offline is reviewed as it is."""
    body = (HEAD + "import json\njson._default_encoder = json.JSONEncoder(sort_keys=True)\n"
            "aws.s3.Bucket('b', tags=tags)\npulumi.export('doc', json.dumps({'b': 1, 'a': 2}))\n")
    [r] = review([str(_write(tmp_path, "no-callback", body))], now=FIXED_NOW)
    assert r.rendering.error is None and not r.rendering.unseen and r.exit_code != 3, (r.exit_code, r.rendering.error)
