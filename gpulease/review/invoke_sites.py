"""Where a program called a lookup (an invoke such as ``aws.get_availability_zones()``), for the mocks' messages.

The SDK runs an invoke's request on a worker thread (``run_in_executor``), and the output form
(``get_x_output``) later still, in a task: by the time the mocks answer, the program's frame is no longer on the
stack that asks. So while a program renders, the SDK's invoke entry points (``pulumi.runtime.invoke``,
``invoke_output``, ...; the generated provider functions call them through the ``pulumi.runtime`` module) are
wrapped: the wrapper finds the program's frame on the caller's stack and puts ``file:line`` in a context
variable. The SDK copies the context into the task and the worker thread (``asyncio.ensure_future``,
``wrap_with_context``), so the mocks read the site of the very call they answer.
"""

from __future__ import annotations

import contextvars
import functools
import os
import sys
import sysconfig
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pulumi.runtime

INVOKE_SITE: contextvars.ContextVar[str | None] = contextvars.ContextVar("gpulease_invoke_site", default=None)
"""``file:line`` of the program's call of the lookup being answered (None outside a wrapped invoke)."""
INVOKE_TYPE: contextvars.ContextVar[type | None] = contextvars.ContextVar("gpulease_invoke_type", default=None)
"""The SDK's result class of the lookup being answered (its ``typ``), which declares the result's types."""

_ENTRY_POINTS = ("invoke", "invoke_single", "invoke_async", "invoke_output", "invoke_output_single")
_REVIEW_DIR = str(Path(__file__).resolve().parent) + os.sep


def _library_dirs() -> tuple[str, ...]:
    """The interpreter's own and installed libraries: frames there are never the program's."""
    paths = sysconfig.get_paths()
    dirs = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(k)}
    dirs |= {str(Path(p).resolve()) for p in dirs}
    return tuple(sorted(d.rstrip(os.sep) + os.sep for d in dirs))


_LIBRARIES = _library_dirs()


def is_program_file(filename: str) -> bool:
    """A frame of the program (or of the project's own modules), not of the interpreter, an SDK or this engine."""
    if not filename or filename.startswith("<"):
        return False
    return not filename.startswith(_LIBRARIES) and not filename.startswith(_REVIEW_DIR)


def display_path(filename: str, base: str | None = None) -> str:
    """A program file as a reader finds it: relative to the program's folder (``base``, default the working
    directory, which is the program's folder while it renders) when inside it, else as given."""
    try:
        relative = os.path.relpath(filename, base)
    except ValueError:  # another drive
        return filename
    return filename if relative.startswith("..") else relative


def program_site(frame: Any = None) -> str | None:
    """``file:line`` of the innermost program frame above ``frame`` (default: the caller's caller)."""
    frame = frame or sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if is_program_file(filename):
            return f"{display_path(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def _wrap(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        token = INVOKE_SITE.set(program_site(sys._getframe(1)))
        typed = INVOKE_TYPE.set(kwargs.get("typ") or (args[3] if len(args) > 3 else None))
        try:
            return original(*args, **kwargs)
        finally:
            INVOKE_TYPE.reset(typed)
            INVOKE_SITE.reset(token)

    wrapper.__gpulease_original__ = original  # type: ignore[attr-defined]
    return wrapper


@contextmanager
def recording_sites() -> Iterator[None]:
    """While a program renders: every invoke carries its program site in ``INVOKE_SITE``."""
    originals = {name: getattr(pulumi.runtime, name) for name in _ENTRY_POINTS}
    for name, original in originals.items():
        if not hasattr(original, "__gpulease_original__"):
            setattr(pulumi.runtime, name, _wrap(original))
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(pulumi.runtime, name, original)


def failure_site(exc: BaseException, base: str | None = None) -> str | None:
    """``file:line`` of the innermost program frame an exception passed through (its cause's, else), or None;
    the file relative to ``base`` (``display_path``)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        site = None
        tb = current.__traceback__
        while tb is not None:
            if is_program_file(tb.tb_frame.f_code.co_filename):
                site = f"{display_path(tb.tb_frame.f_code.co_filename, base)}:{tb.tb_lineno}"
            tb = tb.tb_next
        if site is not None:
            return site
        current = current.__cause__ or current.__context__
    return None
