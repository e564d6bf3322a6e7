"""What changes in an allowed module without the program replacing anything is no difference
(``gpulease/review/helper_state.py``): ``base64`` fills its Ascii85 and Base85 tables (``_a85chars``,
``_b85chars``, ``_b85dec``) the first time ``a85encode``, ``b85encode`` or ``b85decode`` runs, by rebinding module
globals that were ``None`` at import. A program that only calls ``base64.b85encode`` replaced nothing an allowed
helper runs with: a harmless apply stays judged, never partial. So does ``gettext.install()``, which adds
``builtins._`` (its translations' ``gettext``), a name no allowed helper reads. Anything else is a replacement: a
table set to what is not plain data, a name of the program's added to ``builtins`` or to a helper's module, a module
swapped in ``sys.modules``."""

from __future__ import annotations

import base64
import builtins
import gettext
import json
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gpulease.review import helper_state
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


def test_gettext_install_is_no_replacement(tmp_path: Path) -> None:
    body = (HEAD + "import gettext, json\ngettext.install('app')\naws.ec2.SecurityGroup('sg', tags=tags)\n"
            "pulumi.export('p', U.apply(lambda t: json.dumps({'name': t})))\n")
    [r] = review([str(_write(tmp_path, "gettext", body))], now=FIXED_NOW)
    assert r.rendering.error is None and r.exit_code != 3, r.rendering.error


@contextmanager
def _set(space: object, name: str, value: object) -> Iterator[None]:
    had = vars(space).get(name, _NONE)
    setattr(space, name, value)
    try:
        yield
    finally:
        if had is _NONE:
            delattr(space, name)
        else:
            setattr(space, name, had)


_NONE = object()
REPLACEMENTS = {
    # a table noted as None that became something other than plain data
    "none-to-an-object": (base64, "_b85chars", types.SimpleNamespace(), "base64._b85chars"),
    "none-to-a-list-holding-an-object": (base64, "_a85chars", [object()], "base64._a85chars"),
    # a name added to builtins: only gettext's own ``_`` is no replacement
    "new-builtin": (builtins, "make_gpu", lambda: None, "builtins.make_gpu"),
    "builtins-underscore-of-the-program": (builtins, "_", lambda s: s, "builtins._"),
    "new-helper-global": (json, "dumps_all", json.dumps, "json.dumps_all"),
}


@pytest.mark.parametrize("name", sorted(REPLACEMENTS))
def test_what_is_no_table_fill_or_gettext_install_is_a_replacement(name: str) -> None:
    space, key, value, said = REPLACEMENTS[name]
    with _set(space, key, value):
        assert helper_state.replaced({}) == said
    assert helper_state.replaced({}) is None


def test_gettext_installed_underscore_is_no_replacement() -> None:
    with _set(builtins, "_", gettext.NullTranslations().gettext):
        assert helper_state.replaced({}) is None


def test_a_module_replaced_in_sys_modules_is_found() -> None:
    original = sys.modules["textwrap"]
    sys.modules["textwrap"] = types.ModuleType("textwrap")
    try:
        assert helper_state.replaced({}) == "sys.modules['textwrap']"
    finally:
        sys.modules["textwrap"] = original
    assert helper_state.replaced({}) is None
