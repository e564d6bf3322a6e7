"""Cheaper equivalents of two SDK steps that dominate registering a thousand resources under mocks.

Both give the SDK's own results (pinned by ``tests/review/test_sdk_speed.py``), only faster:

- **The stack trace of each registration** (``pulumi.runtime.resource._get_stack_trace``). The SDK calls
  ``traceback.extract_stack()`` per resource, which reads every frame's source line through ``linecache``, and
  converts each file name to a ``file://`` URI with ``pathlib`` again for every frame of every resource. The
  equivalent walks the frames directly and converts each file name once.
- **The dependency cycle check** (``pulumi.runtime.resource_cycle_breaker.declare_dependency``, imported into
  ``pulumi.runtime.rpc``): a depth-first search over every dependency seen so far, written as nested generators,
  one generator per resource visited. The equivalent is the same search with an explicit stack.

- **The monitor calls on worker threads**: every registration and lookup is handed to the event loop's default
  executor (``run_in_executor``), a thread pool. Under mocks the "monitor" is the SDK's ``MockMonitor`` in this
  process, which answers at once; the hand-over to a thread and back (and the wait for the interpreter lock)
  cost more than the answer. The equivalent runs the call at once on the calling thread, as a worker thread
  would run it: with no running event loop and a loop of its own (the ``MockMonitor`` awaits its serialisation
  on the thread's loop), and hands back an already completed future.

- **The cyclic garbage collector**: a render allocates a few hundred thousand futures, outputs and callbacks
  that live until the render ends; every full collection walks all of them again (about 40% of a 100-run
  sweep's render). It is paused while the program renders (``collector_paused``); the first collection after
  it frees the cycles the render left: memory grows by those cycles meanwhile, which the render frees at its
  end anyway (about the same peak for a 100-run sweep).

- **The site of each registration**: while computing the stack trace, the program's own ``file:line`` is kept
  in ``invoke_sites.REGISTRATION_SITE``, a context variable the registration's task inherits, so that an input the
  SDK cannot serialize fails naming the program's line (``invoke_sites.prepare_resource``).

They are installed only while a program renders under mocks (``fast_registration``); under a real engine nothing
changes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import pathlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pulumi.runtime import resource as sdk_resource
from pulumi.runtime import resource_cycle_breaker as sdk_cycles
from pulumi.runtime import rpc as sdk_rpc
from pulumi.runtime.proto import source_pb2

from gpulease.review.invoke_sites import REGISTRATION_SITE, program_site
from gpulease.review.manifest_text import note_component

_URIS: dict[str, str | None] = {}


def _uri(filename: str) -> str | None:
    """``pathlib.Path(filename).as_uri()`` as the SDK computes it, None where it fails (a relative or pseudo name)."""
    try:
        return _URIS[filename]
    except KeyError:
        pass
    try:
        uri: str | None = pathlib.Path(filename).as_uri() if filename else None
    except BaseException:
        uri = None
    _URIS[filename] = uri
    return uri


def stack_trace() -> source_pb2.StackTrace:
    """What ``_get_stack_trace`` returns: the frames outside the third ``__init__`` from the top (the concrete
    resource's constructor), innermost first, each with its source position where the file name is a path."""
    frames = []
    frame: Any = sys._getframe(1)
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    # frames[0] is the innermost; the SDK counts __init__ frames from the innermost outwards.
    seen, third = 0, None
    for position, frame in enumerate(frames):
        if frame.f_code.co_name == "__init__":
            seen += 1
            if seen == 3:
                third = position
                break
    REGISTRATION_SITE.set(program_site(frames[0]))
    if third is not None:
        note_component(frames[third])
    if third is None or third >= len(frames) - 1:
        return source_pb2.StackTrace()
    out = []
    for outer in frames[third + 1:]:
        uri = _uri(outer.f_code.co_filename)
        line = outer.f_lineno
        if uri is None or line is None:
            out.append(source_pb2.StackFrame(pc=None))
        else:
            out.append(source_pb2.StackFrame(pc=source_pb2.SourcePosition(uri=uri, line=line)))
    return source_pb2.StackTrace(frames=out)


def declare_dependency(from_resource: Any, to_resource: Any) -> bool:
    """``resource_cycle_breaker.declare_dependency``: record ``from -> to`` unless ``from`` is reachable from
    ``to`` (a cycle); the same graph, kept on the same attribute."""
    attribute = sdk_cycles._DEPENDENCIES_PROPERTY
    visited: set[int] = set()
    stack = [to_resource]
    while stack:
        node = stack.pop()
        if node is from_resource or node == from_resource:
            return False
        if id(node) in visited:
            continue
        visited.add(id(node))
        stack.extend(getattr(node, attribute, ()))
    deps = getattr(from_resource, attribute, None)
    setattr(from_resource, attribute, (deps | {to_resource}) if deps else {to_resource})
    return True


class InlineExecutor(concurrent.futures.ThreadPoolExecutor):
    """An executor that runs each call at once on the calling thread, as a worker thread would run it.

    A worker thread has no running event loop and, once the SDK asked for one, an idle loop of its own
    (``pulumi.runtime.sync_await._ensure_event_loop``); the call sees the same here. It is a
    ``ThreadPoolExecutor`` only because ``loop.set_default_executor`` accepts nothing else; it starts no thread."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self._own_loop = asyncio.new_event_loop()

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        running = asyncio.events._get_running_loop()
        policy = asyncio.get_event_loop_policy()
        current = policy._local._loop  # type: ignore[attr-defined]  # the thread's loop, without creating one
        asyncio.events._set_running_loop(None)
        policy.set_event_loop(self._own_loop)
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:  # delivered through the future, as from a worker thread
            future.set_exception(exc)
        else:
            future.set_result(result)
        finally:
            policy.set_event_loop(current)
            asyncio.events._set_running_loop(running)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._own_loop.close()
        super().shutdown(wait=wait, cancel_futures=cancel_futures)


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a bounded piece of work runs, then back as it was.

    For work that allocates a bounded amount and frees it by reference counting (a render, one analysis of a
    rendering): a collection in the middle of it would only walk what is still in use, above all the
    rendering's captured resources. Reference counting frees as before; only cycles wait for the next
    collection. ``gpulease plan``'s render child runs with the collector off altogether (``isolation``)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


@contextmanager
def fast_registration() -> Iterator[None]:
    """Install the equivalents while a program renders under mocks (on this thread's event loop)."""
    saved = (sdk_resource._get_stack_trace, sdk_rpc.declare_dependency)
    loop = asyncio.get_event_loop()
    saved_executor = loop._default_executor  # type: ignore[attr-defined]
    inline = InlineExecutor()
    sdk_resource._get_stack_trace = stack_trace
    sdk_rpc.declare_dependency = declare_dependency
    loop.set_default_executor(inline)
    try:
        with collector_paused():
            yield
    finally:
        sdk_resource._get_stack_trace, sdk_rpc.declare_dependency = saved
        loop._default_executor = saved_executor  # type: ignore[attr-defined]
        inline.shutdown()
