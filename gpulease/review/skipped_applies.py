"""Applies a preview does not run: the review runs them itself, offline, with the engine's unknown marker.

``Output.apply`` runs its callback only once the output's value is known (``pulumi/output.py``, ``apply``'s
``run``: ``if not (is_known or run_with_unknowns)`` returns an unknown output without calling it); the engine's
preview skips those callbacks in the same way. A resource registered inside such a callback would never be
registered during the review, which would report it as "0 resources, $0.00" and pass.

``recording_skipped_applies`` watches every ``apply`` the program calls during preview. When the output turns out
unknown (so the SDK skipped the callback), the review runs the callback once itself, under the same mocks and
site recording, with ``rpc.UNKNOWN`` (the sentinel string the capture reads as unknown) as the value:

- a resource it registers is captured and judged like any other (a field holding the marker makes the review
  partial through ``unknown_compute``), and one line goes to the render's errors, which makes the review partial
  (exit 3): "resource aws:ec2/instance:Instance 'gpu' was registered by an apply run offline with an unknown value
  (at file:line of the apply)", since at ``pulumi up`` the callback sees another value;
- its return value is discarded: the apply's own output stays unknown for the program;
- when it registers nothing, raises, or the budget is spent (each callback once, ``MAX_RUNS`` in all), the static
  rule below decides (a callback that registers nothing for the marker may still register for the real value:
  ``if env == "prod": ...``):
  a callback that *may register resources* makes the review partial ("an apply on a value unknown offline was not
  run (at file:line)"), any other is ignored. Applies nested in a callback run offline follow the same rule.

The static rule for *may register resources*, read from the callback's code without running it:

- a callback defined outside the program (an SDK's or the standard library's function, ``json.dumps``) does not;
- a callback of the program does when a name its code (or a function nested in it) reads resolves, through its
  globals or closure, to a provider package module (``pulumi_*``), a resource class (``pulumi.Resource``), an
  attribute of a module read in the same code that is a resource class (``pulumi.StackReference``), or a function
  of the program that does by the same rule (followed ``MAX_DEPTH`` calls deep; deeper counts as registering);
- anything the rule cannot read (no code object, a callable object of the program) counts as registering.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pulumi
from pulumi.output import _OutputData
from pulumi.runtime import rpc

from gpulease.review.invoke_sites import is_program_file, program_location, site_text

MAX_DEPTH = 4


def _names(code: types.CodeType) -> set[str]:
    """The global and attribute names ``code`` reads, with those of the functions defined inside it."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _registers_value(value: Any, names: set[str], depth: int) -> bool:
    if isinstance(value, types.ModuleType):
        if value.__name__.split(".")[0].startswith("pulumi_"):
            return True
        return any(inspect.isclass(attr := getattr(value, name, None)) and issubclass(attr, pulumi.Resource)
                   for name in names)
    if inspect.isclass(value):
        return issubclass(value, pulumi.Resource)
    if isinstance(value, types.FunctionType | types.MethodType):
        return may_register(value, depth + 1)
    return False


def may_register(func: Any, depth: int = 0) -> bool:
    """Whether the callback ``func`` may register resources (the module doc's rule)."""
    if depth > MAX_DEPTH:
        return True
    func = inspect.unwrap(func) if callable(func) else func
    if isinstance(func, functools.partial):
        return may_register(func.func, depth + 1)
    if isinstance(func, types.MethodType):
        func = func.__func__
    code = getattr(func, "__code__", None)
    if not isinstance(code, types.CodeType):
        kind = type(func)
        module = sys.modules.get(getattr(kind, "__module__", "") or "")
        return is_program_file(getattr(module, "__file__", "") or "")
    if not is_program_file(code.co_filename):
        return False
    names = _names(code)
    scope = dict(getattr(func, "__globals__", {}))
    for var, cell in zip(code.co_freevars, getattr(func, "__closure__", None) or (), strict=False):
        try:
            scope[var] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return any(name in scope and _registers_value(scope[name], names, depth)
               for name in names | set(code.co_freevars))


MAX_RUNS = 1000


def skipped_line(site: str | None) -> str:
    where = f" (at {site})" if site else ""
    return (f"an apply on a value unknown offline was not run{where}; resources it may register were not seen; "
            "accepted: resources registered outside apply, or a value known offline")


def registered_line(kind: str, name: str, site: str | None) -> str:
    where = f" (at {site})" if site else ""
    return (f"resource {kind} {name!r} was registered by an apply run offline with an unknown value{where}; at "
            "update the callback sees another value; accepted: resources registered outside apply, or a value "
            "known offline")


class _OfflineRuns:
    """The callbacks run offline so far, and the apply site of the one running now (runs are synchronous)."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        self.ran: dict[int, Any] = {}  # id -> callback, kept alive so that an id is never reused
        self.sites: list[str | None] = []
        self.registered = 0  # resources registered by callbacks run offline
        self.nested = 0  # applies called by callbacks run offline (each decided by its own run)

    def add(self, line: str) -> None:
        if line not in self.errors:
            self.errors.append(line)

    def run(self, func: Callable[[Any], Any], site: str | None) -> None:
        """Run ``func`` with the unknown marker once; fall back to the static rule when it cannot be run."""
        if id(func) in self.ran and self.ran[id(func)] is func:
            return
        if len(self.ran) >= MAX_RUNS:
            if may_register(func):
                self.add(skipped_line(site))
            return
        self.ran[id(func)] = func
        self.sites.append(site)
        before = (self.registered, self.nested)
        try:
            func(rpc.UNKNOWN)  # the return value is discarded: the apply's output stays unknown
        except Exception:
            if may_register(func):
                self.add(skipped_line(site))
        else:
            # Nothing registered with the marker proves nothing for the real value (``if env == "prod": ...``): the
            # static rule still decides whether it may register.
            if (self.registered, self.nested) == before and may_register(func):
                self.add(skipped_line(site))
        finally:
            self.sites.pop()


@contextmanager
def recording_skipped_applies(errors: list[str]) -> Iterator[None]:
    """While the program renders, a skipped apply's callback is run offline with the unknown marker (module doc)."""
    original = pulumi.Output.apply
    original_init = pulumi.Resource.__init__
    runs = _OfflineRuns(errors)

    def apply(self: pulumi.Output[Any], func: Callable[[Any], Any], run_with_unknowns: bool = False) -> Any:
        result = original(self, func, run_with_unknowns)
        if run_with_unknowns or not pulumi.runtime.is_dry_run():
            return result
        if runs.sites:
            runs.nested += 1
        # The apply's line is read now (the frame moves on); its text is only made for an apply found unknown.
        location = program_location(sys._getframe(1))
        data = self._data

        async def probe() -> _OutputData[None]:
            try:
                known = (await data).is_known
            except Exception:
                known = True
            if not known:
                runs.run(func, site_text(location))
            return _OutputData(resources=set(), value=None, is_known=True, is_secret=False)

        # An output the SDK tracks: the program's end waits for the probe and what the callback registers.
        pulumi.Output._from_data(probe())  # type: ignore[attr-defined]
        return result

    def init(resource: pulumi.Resource, *args: Any, **kwargs: Any) -> None:
        if runs.sites:
            runs.registered += 1
            kind, name = (list(args[:2]) + [kwargs.get("t", "?"), kwargs.get("name", "?")][len(args[:2]):])
            runs.add(registered_line(str(kind), str(name), runs.sites[-1]))
        original_init(resource, *args, **kwargs)

    pulumi.Output.apply = apply  # type: ignore[method-assign]
    pulumi.Resource.__init__ = init  # type: ignore[method-assign]
    try:
        yield
    finally:
        pulumi.Output.apply = original  # type: ignore[method-assign]
        pulumi.Resource.__init__ = original_init  # type: ignore[method-assign]
