"""The plain values the capture records (``gpulease.review.render``): JSON-like data, unknowns as None.

The SDK's mock monitor deserializes each registration's inputs once to hand them to the mocks
(``pulumi.runtime.mocks.MockMonitor.RegisterResource``, pulumi 3: ``rpc.deserialize_properties(request.object)``
into ``MockResourceArgs.inputs``). ``InputRecorder`` keeps the plain form of exactly those values, taken before
the mocks see them, so the capture does not deserialize the same request a second time.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.runtime import rpc

_SCALARS = frozenset((str, int, float, bool, type(None)))
SECRET = "[secret]"
"""What the reports print in place of a secret value (``redact``)."""


def plain(value: Any) -> Any:
    """Deserialized properties as plain JSON-like data (unknowns become None)."""
    kind = type(value)
    if kind is dict:
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            # Judged as what it is, as the engine hands a policy pack its plain values; the reports hide the
            # value itself (``redact``).
            return plain(value.get("value"))
        return {k: plain(v) for k, v in value.items()}
    if kind in _SCALARS:
        return value
    if kind is list:
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return plain(value.get("value"))
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if value is rpc.UNKNOWN or type(value).__name__ == "Unknown":
        return None
    return value


def copy_path(source: Mapping[str, Any], target: dict[str, Any], path: list[str]) -> None:
    """Set ``path`` (a dotted input path, split) of ``target`` to ``source``'s value there, or drop it there when
    ``source`` has none."""
    head, rest = path[0], path[1:]
    if head not in source:
        target.pop(head, None)
    elif not rest:
        target[head] = source[head]
    elif isinstance(source[head], Mapping) and isinstance(target.get(head), dict):
        copy_path(source[head], target[head], rest)


class InputRecorder(pulumi.runtime.Mocks):
    """The mocks as given, recording on each thread the plain inputs of the last resource they were asked to
    create there (``take``). Every other attribute is the given mocks' own.

    Per thread: without the review's inline executor (``sdk_speed``) the SDK calls the monitor from worker
    threads, several at once, and each registration asks the mocks on the thread it runs on."""

    def __init__(self, mocks: pulumi.runtime.Mocks):
        self.mocks = mocks
        self._last = threading.local()

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> Any:
        self._last.inputs = plain(args.inputs)
        return self.mocks.new_resource(args)

    def forget(self) -> None:
        """Forget this thread's last inputs (before a registration)."""
        self._last.inputs = None

    def take(self) -> dict[str, Any] | None:
        """The plain inputs this thread's mocks were last asked for since ``forget``, or None."""
        return getattr(self._last, "inputs", None)

    def call(self, args: pulumi.runtime.MockCallArgs) -> Any:
        return self.mocks.call(args)

    def register_transform(self, transform: Any) -> None:
        self.mocks.register_transform(transform)

    def register_invoke_transform(self, transform: Any) -> None:
        self.mocks.register_invoke_transform(transform)

    def __getattr__(self, name: str) -> Any:
        if name == "mocks":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.mocks, name)
