"""The static rule for a callback run offline that registered nothing: *may it register resources* for the value
it sees at ``pulumi up``? It fails closed: a callback **may register** unless everything it can reach is provably
harmless, read from its code without running it.

What a callback can reach (walked transitively, each thing once, at most ``MAX_DEPTH`` calls deep and
``MAX_NODES`` things in all; deeper or more counts as registering):

- its code object and the code objects nested in it (a lambda, a local function, a class body), their global and
  attribute names (``co_names``) and the modules they import (``import x`` inside the code);
- its default arguments (``__defaults__``, ``__kwdefaults__``) and its closure cells;
- each name its code reads that resolves, through its globals, closure or the builtins, to a value:
  - a function or class of the program (a file of the project): walked the same way (a class: each function,
    static method, class method and property of it and of its program bases; an instance: its class and its
    attributes' values);
  - a container (``list``, ``tuple``, ``set``, ``dict``): its values, at most ``MAX_ITEMS``;
  - plain data (``str``, ``bytes``, numbers, ``None``) and ``pulumi.Output`` values: harmless;
  - a module, function, class or object on the allow-list below: harmless (a module's attributes the code names
    are read too: ``json.codecs`` is a module that is not on it);
  - anything else may register: a resource class (``pulumi.Resource``: ``aws.ec2.Instance``,
    ``pulumi.StackReference``) or instance, a provider package (``pulumi_*``: also its invokes, such as
    ``aws.iam.get_policy_document``, which the review does not tell from a resource), ``importlib``, ``sys``,
    ``os``, a third-party module, a callable object.
- a name with two leading and trailing underscores read as an attribute (``__class__``, ``__subclasses__``,
  ``__globals__``; except ``__init__``, ``__name__``, ``__qualname__``, ``__module__``, ``__doc__``) may register:
  it reaches what the rule does not read.

The allow-list: the builtins except ``eval``, ``exec``, ``compile``, ``getattr``, ``setattr``, ``delattr``,
``__import__``, ``globals``, ``locals``, ``vars``, ``breakpoint`` and ``type`` (each may reach any object or
class); the modules ``json``, ``base64``, ``hashlib``, ``textwrap``, ``re``, ``string``, ``math``; the methods of
``str``, ``bytes``, ``dict``, ``list`` and the other plain types; and in ``pulumi`` only ``Output`` (its helpers:
``all``, ``concat``, ``format``, ``from_input``, ``json_dumps``; an ``apply`` in the callback is judged on its own),
``Config``, ``log``, ``get_stack`` and ``get_project``.
"""

from __future__ import annotations

import builtins
import dis
import functools
import inspect
import sys
import types
from typing import Any

import pulumi

from gpulease.review.invoke_sites import is_program_file

MAX_DEPTH = 4
MAX_NODES = 400
MAX_ITEMS = 100
ALLOWED_MODULES = frozenset({"json", "base64", "hashlib", "textwrap", "re", "string", "math",
                             "_json", "_hashlib", "binascii", "_sre", "_string"})
DENIED_BUILTINS = frozenset({"eval", "exec", "compile", "getattr", "setattr", "delattr", "__import__", "globals",
                             "locals", "vars", "breakpoint", "type"})
PULUMI_ALLOWED = frozenset({"Output", "Config", "log", "get_stack", "get_project"})
PLAIN = (str, bytes, bytearray, int, float, complex, bool, type(None), range, slice)
CONTAINERS = (list, tuple, set, frozenset, dict)
DUNDERS_ALLOWED = frozenset({"__init__", "__name__", "__qualname__", "__module__", "__doc__"})


class _MayRegisterError(Exception):
    """Something the callback can reach may register."""


def _top(name: str | None) -> str:
    return (name or "").split(".")[0]


def _imports(code: types.CodeType) -> set[str]:
    return {str(i.argval) for i in dis.get_instructions(code) if i.opname == "IMPORT_NAME"}


def _defined_in_program(cls: type) -> bool:
    """A class whose functions are all the program's (the program's ``__main__`` is not in ``sys.modules``)."""
    files = set()
    for member in vars(cls).values():
        member = getattr(member, "__func__", getattr(member, "fget", member))
        if isinstance(member, types.FunctionType):
            files.add(member.__code__.co_filename)
    return bool(files) and all(is_program_file(f) for f in files)


class _Walk:
    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.keep: list[Any] = []  # what was seen, kept alive so that an id is never reused

    def value(self, value: Any, depth: int, names: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        if isinstance(value, (*PLAIN, pulumi.Output)):
            return
        if id(value) in self.seen:
            return
        if depth > MAX_DEPTH or len(self.seen) >= MAX_NODES:
            raise _MayRegisterError
        self.seen.add(id(value))
        self.keep.append(value)
        if isinstance(value, CONTAINERS):
            items = list(value.values()) if isinstance(value, dict) else list(value)
            if len(items) > MAX_ITEMS:
                raise _MayRegisterError
            for item in items:
                self.value(item, depth, names)
        elif isinstance(value, types.ModuleType):
            self.module(value, names, depth)
        elif isinstance(value, functools.partial):
            for part in (value.func, *value.args, *value.keywords.values()):
                self.value(part, depth + 1, names)
        elif isinstance(value, types.MethodType):
            self.value(value.__func__, depth, names)
            self.value(value.__self__, depth, names)
        elif isinstance(value, staticmethod | classmethod):
            self.value(value.__func__, depth, names)
        elif isinstance(value, property):
            for part in (value.fget, value.fset, value.fdel):
                if part is not None:
                    self.value(part, depth, names)
        elif isinstance(value, types.FunctionType):
            self.function(value, depth)
        elif isinstance(value, types.BuiltinFunctionType | types.BuiltinMethodType):
            self.builtin(value)
        elif inspect.isclass(value):
            self.klass(value, depth)
        else:
            self.instance(value, depth)

    def module(self, module: types.ModuleType, names: set[str], depth: int) -> None:
        if module is pulumi:
            if not all(n in PULUMI_ALLOWED for n in names if hasattr(pulumi, n)):
                raise _MayRegisterError
            return
        if _top(module.__name__) not in ALLOWED_MODULES:
            raise _MayRegisterError
        for name in names:
            if isinstance(attr := getattr(module, name, None), types.ModuleType):
                self.module(attr, names, depth)

    def builtin(self, func: Any) -> None:
        owner = getattr(func, "__self__", None)
        if owner is builtins or owner is None:
            if func.__name__ in DENIED_BUILTINS or _top(getattr(func, "__module__", None)) not in (
                    "builtins", *ALLOWED_MODULES):
                raise _MayRegisterError
        elif isinstance(owner, types.ModuleType):
            if _top(owner.__name__) not in (*ALLOWED_MODULES, "io", "_io"):  # open (the guard refuses writes)
                raise _MayRegisterError
        elif not isinstance(owner, PLAIN + CONTAINERS):  # a method of a plain value: "".join, {}.get
            raise _MayRegisterError

    def klass(self, cls: type, depth: int) -> None:
        if issubclass(cls, pulumi.Resource):
            raise _MayRegisterError
        if cls is pulumi.Output or cls is pulumi.Config:
            return
        module = sys.modules.get(cls.__module__ or "")
        if cls.__module__ == "builtins" or _top(cls.__module__) in ALLOWED_MODULES:
            if cls.__name__ in DENIED_BUILTINS:
                raise _MayRegisterError
            return
        if not (is_program_file(getattr(module, "__file__", "") or "") or _defined_in_program(cls)):
            raise _MayRegisterError
        for base in cls.__mro__[1:]:
            if base is not object:
                self.value(base, depth)
        for member in vars(cls).values():
            if isinstance(member, types.FunctionType | staticmethod | classmethod | property):
                self.value(member, depth + 1)

    def instance(self, obj: Any, depth: int) -> None:
        cls = type(obj)
        if cls in (pulumi.Config,) or (cls.__module__ == "builtins" and isinstance(obj, PLAIN + CONTAINERS)):
            return
        if _top(cls.__module__) in ALLOWED_MODULES:  # a compiled pattern, a hash object
            return
        self.klass(cls, depth)  # a program class's instance; any other object may register
        for item in getattr(obj, "__dict__", {}).values():
            self.value(item, depth)

    def function(self, func: types.FunctionType, depth: int) -> None:
        code = func.__code__
        if not is_program_file(code.co_filename):
            module = getattr(func, "__module__", None)
            if _top(module) == "gpulease":  # the review's own wrapper of an SDK function: what it wraps
                for cell in func.__closure__ or ():
                    self.value(cell.cell_contents, depth)
                return
            if _top(module) not in ALLOWED_MODULES and not (_top(module) == "pulumi"
                                                            and func.__qualname__.startswith("Output.")):
                raise _MayRegisterError
            return
        names = self.code(code)
        for default in (*(func.__defaults__ or ()), *(func.__kwdefaults__ or {}).values()):
            self.value(default, depth, names)
        scope: dict[str, Any] = {}
        for var, cell in zip(code.co_freevars, func.__closure__ or (), strict=False):
            try:
                scope[var] = cell.cell_contents
            except ValueError:  # an empty cell
                continue
        glob = func.__globals__
        table = glob.get("__builtins__", builtins)
        table = table if isinstance(table, dict) else vars(table)
        for name in sorted(names | set(code.co_freevars)):
            if name in scope:
                self.value(scope[name], depth + 1, names)
            elif name in glob:
                self.value(glob[name], depth + 1, names)
            elif name in table:  # a builtin: ``builtin`` and ``klass`` refuse the denied ones
                self.value(table[name], depth + 1, names)

    def code(self, code: types.CodeType) -> set[str]:
        names = set(code.co_names)
        for imported in _imports(code):
            if _top(imported) not in ALLOWED_MODULES:
                raise _MayRegisterError
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                names |= self.code(const)
        if any(n.startswith("__") and n.endswith("__") and n not in DUNDERS_ALLOWED for n in names):
            raise _MayRegisterError
        return names


def may_register(func: Any) -> bool:
    """Whether the callback ``func`` may register resources (the module doc's rule)."""
    try:
        _Walk().value(func, 0)
    except _MayRegisterError:
        return True
    except Exception:  # anything the rule cannot read counts as registering
        return True
    return False
