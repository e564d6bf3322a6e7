"""Every secret value a program makes, recorded while it runs, so that no report prints one.

A secret reaches a report by more ways than a registration's inputs: the message of an exception raised in an
apply, a program's log line, a secret that is never sent to any resource. ``recording_secrets`` records the value
of every ``pulumi.Output`` that resolves as secret and known (``Output.secret``, ``Config.require_secret``, an
``apply`` on a secret, a resource's secret output): each string of it and the text of each number, at every depth,
never a mapping's keys.

An output that only gathers others (``Output.all``, ``Output.from_input`` lifting a dict or list that holds an
output) is not recorded as a whole: each output it gathers is recorded on its own, so a dict of plain tags with
one secret value hides that value, not every tag. Nor is a resource's output property (``rpc.transfer_properties``):
the mocks answer with the inputs, and the engine marks a whole property secret when any part of it is; the part
that is secret was recorded when the program made it. A secret the mocks answer as a plain string or number is
found in the registration's wire form (``redact.secret_values``).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pulumi
from pulumi.runtime import rpc

_GATHERING: contextvars.ContextVar[bool] = contextvars.ContextVar("gpulease_gathering", default=False)


class ProgramSecret(str):
    """One recorded secret text, as a render's sink receives it (an isolated child streams it back)."""


def leaves(value: Any, out: set[str]) -> None:
    """Each string in ``value`` and the text of each number (mapping values, list items; never keys)."""
    from gpulease.review.redact import number_texts

    if isinstance(value, str):
        out.add(value)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        out.update(number_texts(value))
    elif isinstance(value, Mapping):
        for item in value.values():
            leaves(item, out)
    elif isinstance(value, list | tuple):
        for item in value:
            leaves(item, out)


def _gathering(original: Any, static: bool = True) -> Any:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        token = _GATHERING.set(True)
        try:
            return original(*args, **kwargs)
        finally:
            _GATHERING.reset(token)

    return staticmethod(wrapped) if static else wrapped


@contextmanager
def recording_secrets(into: set[str], sink: Callable[[Any], None] | None = None) -> Iterator[None]:
    """While the program runs, each text of each secret value an output resolves to is added to ``into`` and, the
    first time, sent to ``sink`` as a ``ProgramSecret`` (a render's sink streams it to the reviewer)."""

    def record(text: str) -> None:
        if text not in into:
            into.add(text)
            if sink is not None:
                sink(ProgramSecret(text))
    output = pulumi.Output
    original_track, original_all, original_from_input = output._track, output.all, output.from_input
    original_transfer = rpc.transfer_properties

    def track(self: Any) -> None:
        original_track(self)
        if _GATHERING.get():
            return

        def done(fut: Any) -> None:
            if fut.cancelled() or fut.exception() is not None:
                return
            data = fut.result()
            if data.is_secret and data.is_known:
                found: set[str] = set()
                leaves(data.value, found)
                for text in found:
                    record(text)

        self._data.add_done_callback(done)

    output._track = track
    output.all = _gathering(original_all)
    output.from_input = _gathering(original_from_input)
    rpc.transfer_properties = _gathering(original_transfer, static=False)
    try:
        yield
    finally:
        output._track = original_track
        output.all, output.from_input = staticmethod(original_all), staticmethod(original_from_input)
        rpc.transfer_properties = original_transfer
