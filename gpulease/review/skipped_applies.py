"""Applies a preview does not run: resources a program registers inside them are never seen offline.

``Output.apply`` runs its callback only once the output's value is known (``pulumi/output.py``, ``apply``'s
``run``: ``if not (is_known or run_with_unknowns)`` returns an unknown output without calling it); the engine's
preview skips those callbacks in the same way. A resource registered inside such a callback is therefore never
registered during the review, which would report it as "0 resources, $0.00" and pass.

``recording_skipped_applies`` watches every ``apply`` the program calls during preview. When the output turns out
unknown (so the callback was skipped) and the callback *may register resources*, one line goes to the render's
errors, which makes the review partial (exit 3): "an apply on a value unknown offline was not run (at file:line);
resources it may register were not seen".

The rule for *may register resources*, read from the callback's code without running it:

- a callback defined outside the program (an SDK's or the standard library's function, ``json.dumps``) does not;
- a callback of the program does when a name its code (or a function nested in it) reads resolves, through its
  globals or closure, to a provider package module (``pulumi_*``), a resource class (``pulumi.Resource``), an
  attribute of a module read in the same code that is a resource class (``pulumi.StackReference``), or a function
  of the program that does by the same rule (followed ``MAX_DEPTH`` calls deep; deeper counts as registering);
- anything the rule cannot read (no code object, a callable object of the program) counts as registering.

A callback that only formats a string (``lambda v: f"arn:{v}"``, ``lambda v: v.upper()``) reads no such name: its
skip is not reported, so plans with formatting applies on unknown outputs stay judged.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pulumi

from gpulease.review.invoke_sites import is_program_file, program_site

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


def skipped_line(site: str | None) -> str:
    where = f" (at {site})" if site else ""
    return (f"an apply on a value unknown offline was not run{where}; resources it may register were not seen; "
            "accepted: resources registered outside apply, or a value known offline")


@contextmanager
def recording_skipped_applies(errors: list[str]) -> Iterator[None]:
    """While the program renders, a skipped apply whose callback may register resources adds one line to ``errors``."""
    original = pulumi.Output.apply
    watching: set[asyncio.Future[None]] = set()

    def apply(self: pulumi.Output[Any], func: Callable[[Any], Any], run_with_unknowns: bool = False) -> Any:
        result = original(self, func, run_with_unknowns)
        if run_with_unknowns or not pulumi.runtime.is_dry_run() or not may_register(func):
            return result
        site = program_site(sys._getframe(1))

        async def watch() -> None:
            try:
                known = await self._is_known
            except Exception:
                return
            if not known and (line := skipped_line(site)) not in errors:
                errors.append(line)

        task = asyncio.ensure_future(watch())
        watching.add(task)
        task.add_done_callback(watching.discard)
        return result

    pulumi.Output.apply = apply  # type: ignore[method-assign]
    try:
        yield
    finally:
        pulumi.Output.apply = original  # type: ignore[method-assign]
