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

import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pulumi
from pulumi.runtime import rpc

from gpulease.review.gathered import GATHERING as _GATHERING
from gpulease.review.gathered import gathering_all
from gpulease.review.static_rule import trust, untrust


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
    original_init, original_from_data = output.__init__, output._from_data.__func__
    original_from_input = output.from_input
    original_transfer = rpc.transfer_properties

    def found(value: Any) -> None:
        texts: set[str] = set()
        leaves(value, texts)
        for text in texts:
            record(text)

    # Recorded inside the awaitable that resolves the output, before anything awaiting it runs (an apply that
    # logs or raises the value must find it recorded); a done callback would run after such an apply.
    def init(self: Any, resources: Any, future: Any, is_known: Any, is_secret: Any = None) -> None:
        if _GATHERING.get():
            return original_init(self, resources, future, is_known, is_secret)
        box: dict[str, Any] = {}

        async def value() -> Any:
            box["value"] = await future
            return box["value"]

        async def known() -> bool:
            box["known"] = await is_known
            return box["known"]

        async def secret() -> bool:
            result = bool(await is_secret) if is_secret is not None else False
            if result and box.get("known"):
                found(box.get("value"))
            return result

        original_init(self, resources, value(), known(), secret())

    def from_data(cls: Any, data: Any) -> Any:
        if _GATHERING.get():
            return original_from_data(cls, data)

        async def recorded() -> Any:
            resolved = await data
            if resolved.is_secret and resolved.is_known:
                found(resolved.value)
            return resolved

        return original_from_data(cls, recorded())

    output.__init__ = init
    output._from_data = classmethod(from_data)
    output.from_input = _gathering(original_from_input)
    stand_ins = [trust(output.from_input, instead_of=original_from_input), trust(init, instead_of=original_init),
                 trust(from_data, instead_of=original_from_data)]
    rpc.transfer_properties = _gathering(original_transfer, static=False)
    try:
        with gathering_all():  # Output.all: the one stand-in the offline-apply runs share (``gathered``)
            yield
    finally:
        output.__init__, output._from_data = original_init, classmethod(original_from_data)
        output.from_input = staticmethod(original_from_input)
        for stand_in in stand_ins:
            untrust(stand_in)
        rpc.transfer_properties = original_transfer


class _Redacting:
    """A text stream that writes through ``stream`` with each recorded secret replaced (``redact.Redactor``)."""

    def __init__(self, stream: Any, secrets: set[str]):
        self._stream, self._secrets = stream, secrets
        self._seen: frozenset[str] = frozenset()
        self._hide: Any = None

    def write(self, text: str) -> int:
        if self._secrets and isinstance(text, str):
            if len(self._secrets) != len(self._seen):
                from gpulease.review.redact import MIN_LENGTH, Redactor

                self._seen = frozenset(self._secrets)
                self._hide = Redactor(v for v in self._seen if len(v) >= MIN_LENGTH)
            text = self._hide.text(text)
        self._stream.write(text)
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def redacting_streams(secrets: set[str]) -> Iterator[None]:
    """While the program runs, what it prints and logs (``pulumi.log`` under mocks goes to Python's logging, which
    writes to ``sys.stderr``) has each secret recorded so far replaced with ``[secret]``."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Redacting(out, secrets), _Redacting(err, secrets)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
