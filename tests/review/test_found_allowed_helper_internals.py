"""An allowed helper is allowed by its identity, but what it calls is read at call time from module state the
program can replace (``json._default_encoder``, ``base64.binascii``, ``re._compile``, ``pulumi.log._log``,
``pulumi.Config.full_key``, ...). A program that replaced such state, and whose callback calls only the allowed
helper, registers a GPU at ``pulumi up`` for the real value: the review must be partial (exit 3), never pass.
(``config_intact`` covers a replaced getter, not what the getters call.)"""

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
