"""The state the static rule's allowed helpers run with, noted once, and what a program replaced of it.

An allowed helper (``gpulease/review/static_rule.py``) is allowed by its identity, but what it calls is looked up
when it runs, in module and class namespaces a program can assign: ``json.dumps`` calls
``json._default_encoder.encode``, ``base64.b64encode`` calls ``b2a_base64`` through ``base64.binascii``,
``re.sub`` calls ``re._compile``, ``textwrap.dedent`` uses ``textwrap._whitespace_only_re``, ``pulumi.log.info``
calls ``pulumi.log._log``, a ``pulumi.Config`` getter calls ``Config.full_key`` and ``pulumi.config.get_config``,
``pulumi.Config(name)`` runs ``Config.__init__``, and every helper written in Python resolves its builtins in
``builtins``. A program that replaces any of it makes a call of an allowed helper run the program's code.

``SNAPSHOT`` is taken when the review is imported, before any program runs (once per process: a render runs in a
child forked after it, ``gpulease/review/isolation.py``): the exact type of each module in ``MODULES`` and of each
class in ``CLASSES``, and the identity of every value in their namespaces (a ``staticmethod`` or ``classmethod``
by the function it wraps). ``replaced`` compares the namespaces as they are now with it, once per render. What
changes without replacing anything is no difference: a cache filled in place (``re._cache``) keeps its identity,
a submodule imported later is a new attribute of its package that is that submodule, a value noted as ``None`` that
became plain data (a table ``base64`` fills on first use: ``_b85chars``, ``_a85chars``, ``_b85dec``) holds nothing a
helper calls, and ``builtins._`` added by ``gettext.install()`` as its translations' ``gettext`` (``_gettext_install``)
is read by no allowed helper. The review's own
stand-ins for an SDK attribute while a program renders (``static_rule.trust``) are no difference either.
"""

from __future__ import annotations

import builtins
import gettext
import importlib
import json
import sys
import types
from collections.abc import Mapping
from typing import Any

import pulumi

MODULES = ("builtins", "json", "json.decoder", "json.encoder", "json.scanner", "base64", "binascii", "hashlib",
           "re", "re._compiler", "re._parser", "re._constants", "re._casefix", "textwrap", "string", "math",
           "pulumi", "pulumi.log", "pulumi.config", "pulumi.output", "pulumi.metadata", "pulumi.runtime.config",
           "pulumi.runtime.settings")
CLASSES = {"pulumi.Output": pulumi.Output, "pulumi.Config": pulumi.Config, "json.JSONEncoder": json.JSONEncoder,
           "json.JSONDecoder": json.JSONDecoder}
_MISSING = object()
CACHES = frozenset({"__warningregistry__"})
"""Namespace keys the interpreter itself writes while anything runs (``warnings`` notes a warning it showed in the
warning site's module globals, ``Lib/warnings.py``: ``globals.setdefault("__warningregistry__", {})``); no helper
calls through them."""


def _unwrap(value: Any) -> Any:
    return value.__func__ if type(value) in (staticmethod, classmethod) else value


def _snapshot() -> tuple[tuple[str, Any, type, dict[str, Any]], ...]:
    spaces = [(name, importlib.import_module(name)) for name in MODULES]
    spaces += list(CLASSES.items())
    return tuple((label, space, type(space), {k: _unwrap(v) for k, v in vars(space).items()})
                 for label, space in spaces)


SNAPSHOT = _snapshot()
NOTED = frozenset(id(v) for _, _, _, values in SNAPSHOT for v in values.values())
"""The identities of the values noted: what the review may stand in for (``static_rule.trust``)."""


def replaced(trusted: Mapping[int, Any]) -> str | None:
    """The first namespace value (``json._default_encoder``), module (``sys.modules['json']``) or type
    (``json.__class__``) that is not what ``SNAPSHOT`` noted, or None; a value in ``trusted`` stands in for one."""
    for label, space, kind, values in SNAPSHOT:
        if type(space) is not kind:
            return f"{label}.__class__"
        if kind is types.ModuleType and sys.modules.get(label) is not space:
            return f"sys.modules[{label!r}]"
        now = vars(space)
        for key, value in values.items():
            if key in CACHES:
                continue
            current = now.get(key, _MISSING)
            if current is not value and (current := _unwrap(current)) is not value and id(current) not in trusted \
                    and not (value is None and _plain(current, 3)):
                return f"{label}.{key}"
        if len(now) != len(values):
            for key, current in now.items():
                if key not in values and key not in CACHES and not (type(current) is types.ModuleType
                                              and current.__name__ == f"{label}.{key}") \
                        and not (space is builtins and key == "_" and _gettext_install(current)):
                    return f"{label}.{key}"
    return None


def _plain(value: Any, depth: int) -> bool:
    """Plain data by exact type: what a module fills in on first use where it noted ``None`` (``base64``'s
    ``_b85chars = [bytes((i,)) for i in _b85alphabet]``, ``_b85dec``, ``_a85chars``): no helper calls it."""
    if type(value) in (str, bytes, int, float, bool, type(None)):
        return True
    if depth == 0:
        return False
    if type(value) in (list, tuple):
        return all(_plain(item, depth - 1) for item in value)
    return type(value) is dict and all(_plain(k, depth - 1) and _plain(v, depth - 1) for k, v in value.items())


def _gettext_install(value: Any) -> bool:
    """``gettext.install()`` (also a translations object's ``install``) adds ``builtins._``, the translations'
    ``gettext`` method (``Lib/gettext.py``: ``builtins.__dict__['_'] = self.gettext``): a bound method of
    ``gettext``'s own function on an object of exactly ``NullTranslations`` or ``GNUTranslations``. No allowed
    helper reads ``_``; anything else a program adds to ``builtins`` is a replacement."""
    kinds = (gettext.NullTranslations, gettext.GNUTranslations)
    return type(value) is types.MethodType and type(value.__self__) in kinds \
        and value.__func__ in (kinds[0].gettext, kinds[1].gettext)
