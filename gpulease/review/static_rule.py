"""The static rule for a callback run offline that registered nothing: *may it register resources* for the value
it sees at ``pulumi up``? It fails closed: a callback **may register** unless everything it can reach is provably
harmless, read from its code without running it. "Harmless" is narrow and decided by **identity**, never by a
class's or a module's name.

The allowed callables and namespaces are a snapshot taken when this module is imported, before any program runs:
the builtins in ``ALLOWED_BUILTINS`` (never ``eval``, ``exec``, ``compile``, ``getattr``, ``setattr``, ``delattr``,
``__import__``, ``globals``, ``locals``, ``vars``, ``type``, ``breakpoint``, ``open``, ``iter``, ``next``), the
functions in ``MODULE_FUNCTIONS`` (``json.dumps``, ``json.loads``, ``base64.b64encode``, ``hashlib.sha256``,
``re.sub``, ``textwrap.dedent``, ...; ``string``'s constants), ``pulumi.Output``'s ``all``, ``concat``, ``format``,
``from_input``, ``json_dumps`` and ``secret``, ``pulumi.Config`` and its getters, ``pulumi.log``'s functions,
``pulumi.get_stack`` and ``pulumi.get_project``. (The review's own stand-in for ``Output.all`` is allowed while it
replaces it: ``trust``.)

What the callback reaches, walked at most ``MAX_DEPTH`` calls deep and ``MAX_NODES`` things in all (deeper or more
may register):

- a name its code loads (a global, a builtin, a closure cell, a local bound only by ``import m``) resolves to an
  object *now*, through each attribute it reads: the chain is harmless only if an allowed namespace (the module
  ``json``, ``pulumi``, ``pulumi.Output``) is followed by an allowed attribute and the object it ends at *is* an
  allowed callable (so ``json.dumps = mk`` in the program is caught), or is a harmless value; a name that resolves
  to nothing may register; a function whose globals or builtins are not an exact ``dict``, or whose builtins are
  not the real builtins namespace, and a module that is not exactly a ``ModuleType``, may register (the
  interpreter resolves through a mapping's ``__getitem__``, a captured ``__import__``, a module class's property);
- what the allowed helpers run with (``json._default_encoder``, ``re._compile``, ``Config.full_key``, ...) is
  compared with ``helper_state.SNAPSHOT`` once when the program ends (``checking_helper_state``): when a program
  replaced any of it, every callback judged unable to register may register;
- a harmless value is plain by exact type (``type(v)`` is ``str``, ``int``, ``float``, ``bool``, ``NoneType`` or
  ``bytes``), a ``tuple``, ``list`` or ``dict`` of exact type whose keys and items are harmless (at most
  ``MAX_ITEMS`` items, a dict's entries), an allowed callable or namespace, a ``pulumi.Config`` of exact type whose
  attributes are plain, an instance of a provider SDK's output type whose items or attributes are harmless
  (``sdk_outputs.is_output_value``: a nested resource output, a lookup's result), or a function of the program: a
  plain ``types.FunctionType`` whose ``__code__.co_filename`` is a program file (never judged by ``__module__``),
  walked the same way with its defaults, closure cells and the globals it loads; an SDK function known as the
  SDK's own callback (``SDK_CODES``, ``sdk_made``) is read by its closure cells and defaults only;
- anything else may register: a subclass of a plain type, an ``Output``, a bound method, a generator, an
  iterator, a ``mappingproxy``, a dict view, a ``functools.partial``, any class (the program's too), any instance
  of a non-plain type, a module off the allow-list, a function compiled from a string (``exec``);
- an attribute read on a value the callback computes (its argument, a local, a call's result) must be one of
  ``METHODS`` (methods of ``str``, ``bytes``, ``list`` and ``dict``, a hash's digests, a match's groups, a
  ``Config``'s getters, an inner ``apply``, which is judged on its own) or a property name of a provider SDK's
  output type (``sdk_outputs``); any attribute with two leading underscores may register;
- the code may not build a class, store or delete an attribute or a global, or import (absolutely) a module other
  than an allowed one as the review imported it; ``from m import f`` reads ``m``'s allowed ``f`` like ``m.f``.
"""

from __future__ import annotations

import base64
import builtins
import dis
import hashlib
import json
import math
import re
import string
import sys
import textwrap
import types
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pulumi

from gpulease.review import helper_state
from gpulease.review.invoke_sites import is_program_file
from gpulease.review.sdk_outputs import is_output_property, is_output_value, is_sdk_file

MAX_DEPTH = 4
MAX_NODES = 400
MAX_ITEMS = 100
PLAIN_TYPES = (str, int, float, bool, type(None), bytes)
CONTAINER_TYPES = (tuple, list, dict)
ALLOWED_BUILTINS = ("str", "int", "float", "bool", "bytes", "len", "sorted", "min", "max", "sum", "abs", "round",
                    "repr", "format", "list", "tuple", "dict", "set", "frozenset", "enumerate", "zip", "range",
                    "reversed", "any", "all", "isinstance", "chr", "ord", "hex", "divmod", "map", "filter",
                    "ValueError", "TypeError", "KeyError", "RuntimeError", "Exception")
MODULE_FUNCTIONS = {
    json: ("dumps", "loads"),
    base64: ("b64encode", "b64decode", "urlsafe_b64encode", "urlsafe_b64decode", "b32encode", "b16encode"),
    hashlib: ("sha256", "sha1", "sha512", "md5", "blake2b"),
    re: ("sub", "match", "fullmatch", "search", "split", "findall", "escape"),
    textwrap: ("dedent", "indent", "shorten"),
    string: (),
    math: ("ceil", "floor", "isfinite", "gcd"),
}
OUTPUT_HELPERS = ("all", "concat", "format", "from_input", "json_dumps", "secret")
CONFIG_GETTERS = ("get", "require", "get_int", "require_int", "get_bool", "require_bool", "get_float",
                  "require_float", "get_object", "require_object", "get_secret", "require_secret")
LOG_FUNCTIONS = ("debug", "info", "warn", "error")
PULUMI_ATTRIBUTES = ("Output", "Config", "log", "get_stack", "get_project")
# Attributes of a value the callback computes (its argument, a local, a call's result): methods of str, bytes,
# list and dict that call nothing of the program's, a hash object's digests, a Config's getters, an inner apply.
METHODS = frozenset({
    "upper", "lower", "title", "capitalize", "casefold", "strip", "lstrip", "rstrip", "split", "rsplit",
    "splitlines", "join", "replace", "startswith", "endswith", "find", "rfind", "index", "count", "format",
    "encode", "decode", "zfill", "ljust", "rjust", "center", "partition", "rpartition", "isdigit", "isalnum",
    "isalpha", "islower", "isupper", "removeprefix", "removesuffix", "hex", "get", "items", "keys", "values",
    "copy", "append", "extend", "hexdigest", "digest", "group", "groups", "apply", *CONFIG_GETTERS})
FORBIDDEN_OPS = frozenset({"LOAD_NAME", "LOAD_CLASSDEREF", "LOAD_BUILD_CLASS", "STORE_GLOBAL", "DELETE_GLOBAL",
                           "STORE_ATTR", "DELETE_ATTR", "STORE_NAME", "DELETE_NAME", "IMPORT_STAR"})


def _snapshot() -> tuple[dict[int, Any], dict[int, Any]]:
    """The allowed callables and namespaces by identity, read once when the review is imported."""
    table = vars(builtins)
    allowed: dict[int, Any] = {id(table[n]): table[n] for n in ALLOWED_BUILTINS}
    spaces: dict[int, Any] = {}
    for module, names in MODULE_FUNCTIONS.items():
        spaces[id(module)] = module
        allowed.update({id(f): f for f in (vars(module)[n] for n in names)})
    for space, names in ((pulumi.Output, OUTPUT_HELPERS), (pulumi.Config, CONFIG_GETTERS), (pulumi.log, LOG_FUNCTIONS),
                         (pulumi, ("get_stack", "get_project", "Config"))):
        spaces[id(space)] = space
        allowed.update({id(f): f for f in (getattr(space, n) for n in names)})
    allowed[id(pulumi.output.UNKNOWN)] = pulumi.output.UNKNOWN  # the SDK's unknown value, handed with run_with_unknowns
    return allowed, spaces


ALLOWED, NAMESPACES = _snapshot()
BUILTINS = vars(builtins)


def _nested_codes(code: types.CodeType) -> list[types.CodeType]:
    inner = [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return inner + [n for c in inner for n in _nested_codes(c)]


# The callbacks the allowed Output helpers pass to their own applies (``from_input``'s ``liftValues``): SDK code,
# known by the identity of its code object; what they close over is still read.
SDK_CODES = {id(c): c for f in (getattr(pulumi.Output, n) for n in OUTPUT_HELPERS)
             for c in _nested_codes(getattr(f, "__code__", None) or compile("", "", "exec"))}
_SDK_MADE: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()  # ``sdk_made``: by identity


def sdk_made(func: Any, caller: types.FrameType) -> None:
    """Note ``func``, handed to ``Output.apply`` by the frame ``caller``, as a callback the SDK made for its own
    apply when both are SDK code of one module: a plain function whose code file is in an installed ``pulumi``,
    ``pulumi_*`` or ``pulumiverse_*`` package (``sdk_outputs.is_sdk_file``), made in that module (its globals are
    the caller's) and applied by that module's code. So a provider's ``get_*_output`` lookup (``__ret__.apply(lambda
    __response__: GetPolicyDocumentResult(...))``, which only builds the lookup's result object) and
    ``Output.json_loads`` (its ``loads``) are judged like ``SDK_CODES``: their code is the SDK's, what they close
    over and their defaults are read (a program's ``object_hook`` in ``json_loads`` is judged as the program's). An
    SDK function a program hands to ``apply`` itself (``U.apply(aws.ec2.Instance)``, ``U.apply(aws.iam.get_role)``)
    is applied by a frame of the program, never noted: it may register."""
    if (type(func) is types.FunctionType and func.__code__.co_filename == caller.f_code.co_filename
            and func.__globals__ is caller.f_globals and is_sdk_file(caller.f_code.co_filename)):
        _SDK_MADE[id(func)] = func
_TRUSTED: dict[int, Any] = {}  # the review's own stand-ins for an allowed SDK helper while a program runs


def trust(func: Any, instead_of: Any) -> Any:
    """While the review replaces ``instead_of`` (``Output.all``, a ``Config`` getter, ``Output.apply``: an allowed
    callable or a value ``helper_state`` noted) with ``func``, ``func`` is allowed and no replacement."""
    if id(instead_of) in ALLOWED or id(instead_of) in _TRUSTED or id(instead_of) in helper_state.NOTED:
        _TRUSTED[id(func)] = func
    return func


def untrust(func: Any) -> None:
    _TRUSTED.pop(id(func), None)


_VERDICTS = [0]  # callbacks judged unable to register, in this process


@contextmanager
def checking_helper_state(errors: list[str], rendering: Any = None) -> Iterator[None]:
    """While a program renders: when it ends, if any callback was judged unable to register and the program
    replaced something an allowed helper runs with (``helper_state``), every such callback may register, through
    the allowed helper calling the program's code: one line in ``errors``, and ``rendering.unseen``. One
    comparison per render, none per callback."""
    before = _VERDICTS[0]
    try:
        yield
    finally:
        if _VERDICTS[0] != before and (what := helper_state.replaced(_TRUSTED)) is not None:
            errors.append(replaced_line(what))
            if rendering is not None:
                rendering.unseen = True


def replaced_line(what: str) -> str:
    return (f"the program replaced {what}, which the helpers an apply on a value unknown offline calls run with; "
            "resources the apply may register through it were not seen; accepted: the module as Python and the "
            "SDK define it")


class _MayRegisterError(Exception):
    """Something the callback can reach may register."""


def _namespace_names(space: Any) -> tuple[str, ...]:
    if space is pulumi:
        return PULUMI_ATTRIBUTES
    if space is pulumi.Output:
        return OUTPUT_HELPERS
    if space is pulumi.Config:
        return CONFIG_GETTERS
    if space is pulumi.log:
        return LOG_FUNCTIONS
    return MODULE_FUNCTIONS.get(space, ())


def _attribute(space: Any, name: str) -> Any:
    """``space.name`` for an allowed namespace and an allowed name, read without running the program's code."""
    if name not in _namespace_names(space) and space is not string:  # string's attributes: its constants
        raise _MayRegisterError
    found = vars(space).get(name, _MayRegisterError) if _is_module(space) else getattr(space, name)
    if found is _MayRegisterError:
        raise _MayRegisterError
    return found


def _is_module(space: Any) -> bool:
    """A module read by its namespace: exactly a module (a module whose class was swapped reads an attribute
    through the class first, a property of it wins over the namespace)."""
    if isinstance(space, types.ModuleType) and type(space) is not types.ModuleType:
        raise _MayRegisterError
    return isinstance(space, types.ModuleType)


class _Walk:
    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.keep: list[Any] = []  # what was walked, kept alive so that an id is never reused

    def value(self, value: Any, depth: int) -> None:
        if type(value) in PLAIN_TYPES or id(value) in ALLOWED or id(value) in _TRUSTED:
            return
        if id(value) in NAMESPACES:
            _is_module(value)
            return
        if depth > MAX_DEPTH or len(self.seen) >= MAX_NODES:
            raise _MayRegisterError
        if id(value) in self.seen:
            return
        self.seen.add(id(value))
        self.keep.append(value)
        if type(value) in CONTAINER_TYPES:
            self.items(value, depth)
        elif is_output_value(value):  # a provider SDK's output type: what the engine answered (``sdk_outputs``)
            self.items(dict(dict.items(value)) if isinstance(value, dict) else dict(vars(value)), depth)
        elif type(value) is pulumi.Config:
            if any(type(v) not in PLAIN_TYPES for v in vars(value).values()):
                raise _MayRegisterError
        elif type(value) is types.FunctionType and is_program_file(value.__code__.co_filename):
            self.function(value, depth)
        elif type(value) is types.FunctionType and (id(value.__code__) in SDK_CODES
                                                    or _SDK_MADE.get(id(value)) is value):  # the SDK's own
            for cell in value.__closure__ or ():
                self.value(cell.cell_contents, depth + 1)
            for default in (*(value.__defaults__ or ()), *(value.__kwdefaults__ or {}).values()):
                self.value(default, depth + 1)
        elif (type(value) is types.BuiltinMethodType and type(value.__self__) in (*PLAIN_TYPES, *CONTAINER_TYPES)
              and value.__name__ in METHODS):  # "".join, {...}.get: a method of an exact plain type, and its owner
            self.value(value.__self__, depth)
        else:  # a class, a module, a bound method, a generator, an iterator, an Output, a subclass of a plain type
            raise _MayRegisterError

    def items(self, value: tuple[Any, ...] | list[Any] | dict[Any, Any], depth: int) -> None:
        """A container's items (a dict's keys and values), at most ``MAX_ITEMS`` of them (a dict's entries)."""
        if len(value) > MAX_ITEMS:
            raise _MayRegisterError
        for item in [*value.keys(), *value.values()] if type(value) is dict else list(value):
            self.value(item, depth)

    def function(self, func: types.FunctionType, depth: int) -> None:
        for default in (*(func.__defaults__ or ()), *(func.__kwdefaults__ or {}).values()):
            self.value(default, depth + 1)
        closure: dict[str, Any] = {}
        for var, cell in zip(func.__code__.co_freevars, func.__closure__ or (), strict=True):
            try:
                closure[var] = cell.cell_contents
            except ValueError:  # an empty cell: assigned later, unknown now
                closure[var] = _MayRegisterError
        glob = func.__globals__
        table = getattr(func, "__builtins__", None) or glob.get("__builtins__", builtins)  # captured when made
        # LOAD_GLOBAL reads an exact dict directly and any other mapping through its __getitem__/__missing__;
        # IMPORT_NAME calls the captured builtins' __import__: only the real builtins are read as they are.
        if type(glob) is not dict or table is not BUILTINS:
            raise _MayRegisterError
        self.code(func.__code__, depth, glob, table, closure)

    def code(self, code: types.CodeType, depth: int, glob: dict[str, Any], table: dict[str, Any],
             closure: dict[str, Any]) -> None:
        ops = list(dis.get_instructions(code))
        imported = _imported_locals(ops)
        chain: list[Any] = []  # the object a global, closure or imported name resolves to, attribute by attribute
        pushed: Any = _MayRegisterError  # the module the last ``IMPORT_NAME`` pushed
        for i, op in enumerate(ops):
            name = op.argval
            if op.opname in FORBIDDEN_OPS:
                raise _MayRegisterError
            if op.opname in ("LOAD_ATTR", "LOAD_METHOD"):
                if name.startswith("__"):
                    raise _MayRegisterError
                if chain and id(chain[0]) in NAMESPACES:
                    chain[0] = _attribute(chain[0], name)
                    continue
                self.end(chain, depth)
                if name not in METHODS and not is_output_property(name):
                    raise _MayRegisterError
                continue
            self.end(chain, depth)
            if op.opname == "LOAD_GLOBAL":
                chain.append(_resolve(name, glob, table))
            elif op.opname == "LOAD_DEREF" and name in closure:
                chain.append(closure[name])
            elif op.opname == "LOAD_FAST" and name in imported:
                chain.append(imported[name])
            elif op.opname == "IMPORT_NAME":  # ``import json`` of a module the review imported, as it is now
                if (pushed := _imported(ops, i)) is _MayRegisterError:
                    raise _MayRegisterError
            elif op.opname == "IMPORT_FROM":  # ``from json import dumps``: an allowed name, its value harmless
                self.value(_attribute(pushed, name), depth + 1)
            elif op.opname == "LOAD_CONST" and isinstance(op.argval, types.CodeType):
                self.code(op.argval, depth, glob, table, closure)
        self.end(chain, depth)

    def end(self, chain: list[Any], depth: int) -> None:
        if chain:
            obj = chain.pop()
            if obj is _MayRegisterError:
                raise _MayRegisterError
            self.value(obj, depth + 1)


def _resolve(name: str, glob: dict[str, Any], table: dict[str, Any]) -> Any:
    if name in glob:
        return glob[name]
    return table.get(name, _MayRegisterError)  # a name that resolves to nothing may register


def _imported(ops: list[dis.Instruction], at: int) -> Any:
    """The module the ``IMPORT_NAME`` at ``ops[at]`` pushes, or ``_MayRegisterError``: an absolute import (level 0;
    ``from .json import dumps`` is the program's) of an allowed module, as the review imported it (``import a.b``
    pushes the package ``a``, read as any other value; ``from a.b import c`` pushes ``a.b``)."""
    level, fromlist = ops[at - 2: at] if at >= 2 else (None, None)
    if level is None or level.opname != "LOAD_CONST" or fromlist.opname != "LOAD_CONST" or level.argval != 0:
        return _MayRegisterError
    name = ops[at].argval
    if type(module := sys.modules.get(name)) is not types.ModuleType or id(module) not in NAMESPACES:
        return _MayRegisterError
    return module if fromlist.argval else sys.modules.get(name.partition(".")[0], _MayRegisterError)


def _imported_locals(ops: list[dis.Instruction]) -> dict[str, Any]:
    """Locals bound only by ``import m`` of an allowed module, to the module as the review imported it, or by
    ``from m import f``, to ``m``'s allowed ``f`` (anything else ``_MayRegisterError``, which may register)."""
    bound: dict[str, Any] = {}
    other: set[str] = set()
    pushed: Any = _MayRegisterError
    for at, op in enumerate(ops):
        if op.opname == "IMPORT_NAME":
            pushed = _imported(ops, at)
        if op.opname not in ("STORE_FAST", "DELETE_FAST"):
            continue
        before = ops[at - 1].opname if at else None
        if op.opname == "STORE_FAST" and before == "IMPORT_NAME" and pushed is not _MayRegisterError:
            bound[op.argval] = pushed
        elif op.opname == "STORE_FAST" and before == "IMPORT_FROM":
            try:
                bound[op.argval] = _attribute(pushed, ops[at - 1].argval)
            except _MayRegisterError:
                bound[op.argval] = _MayRegisterError
        else:
            other.add(op.argval)
    return {k: v for k, v in bound.items() if k not in other}


def may_register(func: Any, value: Any = None) -> bool:
    """Whether the callback ``func``, called with ``value`` (the known parts an ``Output.all`` hands it: a program
    function or object among them runs its own code), may register resources (the module doc's rule)."""
    try:
        walk = _Walk()
        walk.value(func, 0)
        walk.value(value, 0)
    except _MayRegisterError:
        return True
    except Exception:  # anything the rule cannot read counts as registering
        return True
    _VERDICTS[0] += 1  # decided again when the render ends, if the program replaced a helper's state
    return False
