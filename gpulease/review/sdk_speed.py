"""Cheaper equivalents of two SDK steps that dominate registering a thousand resources under mocks.

Both give the SDK's own results (pinned by ``tests/review/test_sdk_speed.py``), only faster:

- **The stack trace of each registration** (``pulumi.runtime.resource._get_stack_trace``). The SDK calls
  ``traceback.extract_stack()`` per resource, which reads every frame's source line through ``linecache``, and
  converts each file name to a ``file://`` URI with ``pathlib`` again for every frame of every resource. The
  equivalent walks the frames directly and converts each file name once.
- **The dependency cycle check** (``pulumi.runtime.resource_cycle_breaker.declare_dependency``, imported into
  ``pulumi.runtime.rpc``): a depth-first search over every dependency seen so far, written as nested generators,
  one generator per resource visited. The equivalent is the same search with an explicit stack.

They are installed only while a program renders under mocks (``fast_registration``); under a real engine nothing
changes.
"""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pulumi.runtime import resource as sdk_resource
from pulumi.runtime import resource_cycle_breaker as sdk_cycles
from pulumi.runtime import rpc as sdk_rpc
from pulumi.runtime.proto import source_pb2

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


@contextmanager
def fast_registration() -> Iterator[None]:
    """Install the equivalents while a program renders under mocks."""
    saved = (sdk_resource._get_stack_trace, sdk_rpc.declare_dependency)
    sdk_resource._get_stack_trace = stack_trace
    sdk_rpc.declare_dependency = declare_dependency
    try:
        yield
    finally:
        sdk_resource._get_stack_trace, sdk_rpc.declare_dependency = saved
