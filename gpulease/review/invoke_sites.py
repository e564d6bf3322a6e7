"""Where a program called a lookup (an invoke such as ``aws.get_availability_zones()``), for the mocks' messages.

The SDK runs an invoke's request on a worker thread (``run_in_executor``), and the output form
(``get_x_output``) later still, in a task: by the time the mocks answer, the program's frame is no longer on the
stack that asks. So while a program renders, the SDK's invoke entry points (``pulumi.runtime.invoke``,
``invoke_output``, ...; the generated provider functions call them through the ``pulumi.runtime`` module) are
wrapped: the wrapper finds the program's frame on the caller's stack and puts ``file:line`` in a context
variable. The SDK copies the context into the task and the worker thread (``asyncio.ensure_future``,
``wrap_with_context``), so the mocks read the site of the very call they answer.

The same sites name what the SDK cannot send to the engine: a number beyond a double's range (``10**400``) makes
the SDK's serialization raise a bare ``OverflowError`` inside a task, off the program's stack. Under mocks each
sending is therefore labelled with its program site (``SENDING``: a lookup's arguments, a component's
``register_outputs``; a resource's inputs through ``prepare_resource`` and ``REGISTRATION_SITE``, set by the
registration's stack trace in ``sdk_speed``), and the serialization's ``OverflowError`` becomes one line naming the
site, what was sent and what is accepted. Stack outputs are never sent under mocks: ``export_problem`` checks them
as the engine would receive them, at the ``pulumi.export`` site recorded in ``EXPORT_SITES``. The SDK's task
bookkeeping re-raises such an error at the program's end even when the program caught it: the render fails.
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

import pulumi
import pulumi.resource
import pulumi.runtime
from pulumi.runtime import resource as sdk_resource
from pulumi.runtime import rpc as sdk_rpc
from pulumi.runtime import stack as sdk_stack

INVOKE_SITE: contextvars.ContextVar[str | None] = contextvars.ContextVar("gpulease_invoke_site", default=None)
"""``file:line`` of the program's call of the lookup being answered (None outside a wrapped invoke)."""
INVOKE_TYPE: contextvars.ContextVar[type | None] = contextvars.ContextVar("gpulease_invoke_type", default=None)
"""The SDK's result class of the lookup being answered (its ``typ``), which declares the result's types."""

REGISTRATION_SITE: contextvars.ContextVar[str | None] = contextvars.ContextVar("gpulease_registration_site",
                                                                              default=None)
"""The program's ``file:line`` of the resource being registered (set by ``sdk_speed.stack_trace``, read by
``prepare_resource``: the registration's task is created after it, with a copy of this context). Left set after
the registration, so that work a component starts after registering itself (a v1 ``ConfigGroup``'s
``kubernetes:yaml:decode`` tasks) carries the line of the program's call."""
SENDING: contextvars.ContextVar[tuple[str | None, str, str] | None] = contextvars.ContextVar("gpulease_sending",
                                                                                            default=None)
"""What is being serialized for the engine: (program site, subject, what of it) for a lookup's arguments and a
component's outputs."""
EXPORT_SITES: dict[str, str | None] = {}
"""``file:line`` of each ``pulumi.export`` of the render under way, by output name."""
ACCEPTED = "accepted: a number within a double's range (about ±1.8e308)"

_SDK_PREPARE = sdk_resource.prepare_resource
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


_PROGRAM_FILES: dict[str, bool] = {}
"""``is_program_file`` of each code file seen, decided once per file (not per code object: code objects of two
files compare equal when their contents do)."""
_DISPLAYED: dict[tuple[str, str], str] = {}
"""``display_path`` of each program file, by (working directory, file)."""


def is_program_path(filename: str) -> bool:
    """``is_program_file``, decided once per file."""
    mine = _PROGRAM_FILES.get(filename)
    if mine is None:
        mine = _PROGRAM_FILES[filename] = is_program_file(filename)
    return mine


def program_location(frame: Any = None) -> tuple[str, int] | None:
    """(file, line) of the innermost program frame above ``frame`` (default: the caller's caller), read now: a
    frame's ``f_lineno`` moves on as it runs (and is stale once it finished), so the line is taken at the call."""
    frame = frame or sys._getframe(2)
    decided = _PROGRAM_FILES
    while frame is not None:
        filename = frame.f_code.co_filename
        mine = decided.get(filename)
        if mine is None:
            mine = decided[filename] = is_program_file(filename)
        if mine:
            return filename, frame.f_lineno
        frame = frame.f_back
    return None


def site_text(location: tuple[str, int] | None) -> str | None:
    """``file:line`` of a ``program_location``, the file as ``display_path`` shows it from the working directory."""
    if location is None:
        return None
    filename, line = location
    key = (os.getcwd(), filename)
    shown = _DISPLAYED.get(key)
    if shown is None:
        shown = _DISPLAYED[key] = display_path(filename)
    return f"{shown}:{line}"


def program_site(frame: Any = None) -> str | None:
    """``file:line`` of the innermost program frame above ``frame`` (default: the caller's caller)."""
    return site_text(program_location(frame or sys._getframe(2)))


def _wrap(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        site = program_site(sys._getframe(1))
        token = INVOKE_SITE.set(site)
        typed = INVOKE_TYPE.set(kwargs.get("typ") or (args[3] if len(args) > 3 else None))
        lookup = kwargs.get("tok") or (args[0] if args else "")
        sending = SENDING.set((site, f"the lookup {lookup}", "an argument"))
        try:
            return original(*args, **kwargs)
        finally:
            SENDING.reset(sending)
            INVOKE_TYPE.reset(typed)
            INVOKE_SITE.reset(token)

    wrapper.__gpulease_original__ = original  # type: ignore[attr-defined]
    return wrapper


def _too_large(where: str | None, subject: str, what: str, exc: BaseException) -> pulumi.RunError:
    at = f"{where}: " if where else ""
    line = f"{at}{subject}: {what} number is too large to send to the engine ({exc}); {ACCEPTED}"
    return pulumi.RunError(line)


async def prepare_resource(res: Any, ty: str, *args: Any, **kwargs: Any) -> Any:
    """The SDK's ``prepare_resource``; an input it cannot serialize is one line naming the program's line."""
    SENDING.set(None)  # this registration's own task: its inputs, not a lookup or outputs it was started under
    subject = f"{ty} {getattr(res, '_name', '')!r}"
    timeouts = getattr(next((a for a in args if isinstance(a, pulumi.ResourceOptions)), kwargs.get("opts")),
                       "custom_timeouts", None)
    for key in ("create", "update", "delete"):
        value = getattr(timeouts, key, None)
        if value is not None and not isinstance(value, str):  # the request's field is a string (a Go duration)
            raise _unsendable(REGISTRATION_SITE.get(), subject, TypeError(
                f"custom_timeouts {key} is {type(value).__name__}, not a duration string such as '90m'"))
    try:
        return await _SDK_PREPARE(res, ty, *args, **kwargs)
    except OverflowError as exc:
        raise _too_large(REGISTRATION_SITE.get(), f"{ty} {getattr(res, '_name', '')!r}", "an input", exc) from exc
    except (ValueError, TypeError) as exc:
        raise _unsendable(REGISTRATION_SITE.get(), f"{ty} {getattr(res, '_name', '')!r}", exc) from exc


SHOWN = 80
"""The most characters of a refused value's description echoed in the line."""


def _unsendable(where: str | None, subject: str, exc: BaseException) -> pulumi.RunError:
    """An input the SDK cannot serialize (a ``Decimal``, a ``Fraction``, an object of its own): one line, the
    SDK's innermost reason (its messages nest one line per level: ``... has risen: <reason>``) at most ``SHOWN``
    characters."""
    lines = [line for line in str(exc).splitlines() if line.strip()] or [type(exc).__name__]
    reason = lines[-1].split(" has risen: ")[-1].strip()
    reason = reason if len(reason) <= SHOWN else f"{reason[:SHOWN - 3]}..."
    at = f"{where}: " if where else ""
    return pulumi.RunError(f"{at}{subject}: an input cannot be sent to the engine ({reason}); accepted: strings, "
                           "numbers within a double's range, booleans, lists and maps of them, and outputs")


def _serializing(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    async def serialize_properties(*args: Any, **kwargs: Any) -> Any:
        try:
            return await original(*args, **kwargs)
        except OverflowError as exc:
            sending = SENDING.get()
            if sending is None:
                raise
            raise _too_large(*sending, exc) from exc

    return serialize_properties


def _outputs_registered(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def register_resource_outputs(res: Any, outputs: Any) -> Any:
        subject = f"{getattr(res, '_type', '')} {getattr(res, '_name', '')!r}".strip()
        sending = SENDING.set((program_site(sys._getframe(1)), subject, "an output"))
        try:
            return original(res, outputs)
        finally:
            SENDING.reset(sending)

    return register_resource_outputs


def _exported(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def output(self: Any, name: str, value: Any) -> Any:
        EXPORT_SITES[name] = program_site(sys._getframe(1))
        return original(self, name, value)

    return output


def export_problem(name: str, value: Any) -> str | None:
    """The line for a stack output the engine could not be sent (``value`` resolved, plain), else None."""
    try:
        _serialize_plain(value)
    except OverflowError as exc:
        site = EXPORT_SITES.get(name)
        at = f"{site}: " if site else ""
        line = (f"{at}stack output {name!r}: a stack output number is too large to send to the engine ({exc}); "
                f"{ACCEPTED}")
        return line
    return None


def _serialize_plain(value: Any) -> None:
    """Raise ``OverflowError`` where the engine's protobuf ``Value`` cannot hold a number of ``value``."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            float(item)


@contextmanager
def recording_sites() -> Iterator[None]:
    """While a program renders: every invoke carries its program site in ``INVOKE_SITE``, and what the SDK
    cannot send to the engine is one line naming the program's site."""
    originals = {name: getattr(pulumi.runtime, name) for name in _ENTRY_POINTS}
    saved = (sdk_resource.prepare_resource, sdk_rpc.serialize_properties, pulumi.resource.register_resource_outputs,
             sdk_stack.Stack.output)
    for name, original in originals.items():
        if not hasattr(original, "__gpulease_original__"):
            setattr(pulumi.runtime, name, _wrap(original))
    sdk_resource.prepare_resource = prepare_resource
    sdk_rpc.serialize_properties = _serializing(saved[1])
    pulumi.resource.register_resource_outputs = _outputs_registered(saved[2])
    sdk_stack.Stack.output = _exported(saved[3])  # type: ignore[method-assign]
    EXPORT_SITES.clear()
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(pulumi.runtime, name, original)
        (sdk_resource.prepare_resource, sdk_rpc.serialize_properties, pulumi.resource.register_resource_outputs,
         sdk_stack.Stack.output) = saved


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


LIFTED_SITE = "gpulease_lifted_site"
"""The attribute of an ``AttributeError`` raised in a lifted attribute read that holds the program's ``file:line``
of the read (``lifted_sites``)."""


def at_program_site(message: str, exc: BaseException, directory: Path) -> str:
    """A program failure with the program's own ``file:line`` (the innermost program frame it passed through, else
    the lifted attribute read it failed in)."""
    if user_mistake(exc):  # the stack file's own mistake: its message names the file and the field
        return message
    site = failure_site(exc, str(directory)) or getattr(exc, LIFTED_SITE, None)
    return f"{site}: {message}" if site and site not in message else message


def user_mistake(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was caused by, a ``UserError`` (an invalid stack spec the program read)."""
    from gpulease.core.errors import UserError

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, UserError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
