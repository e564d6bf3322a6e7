"""One stand-in for ``pulumi.Output.all`` while a program renders, serving both recorders that read it.

Two recorders need to see ``Output.all``: the secret recorder (``program_secrets``) records the outputs an
``Output.all`` gathers, each on its own, never the gathered whole, so it must know when an output is made inside
one (``GATHERING``); the offline-apply runs (``skipped_applies``) keep each ``Output.all`` output's parts, to hand
a callback run offline the known parts. ``gathering_all`` installs one wrapper while either recorder runs (the
first to enter installs it, the last to leave restores the SDK's): it calls the SDK's ``Output.all`` with
``GATHERING`` set and hands each observer the output with the arguments it was given, still inside
``GATHERING`` (what an observer makes of the parts is gathering too). The static rule allows the wrapper as the
SDK's own ``Output.all`` (``static_rule.trust``).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pulumi

from gpulease.review.static_rule import trust, untrust

GATHERING: contextvars.ContextVar[bool] = contextvars.ContextVar("gpulease_gathering", default=False)
"""Set while ``Output.all`` (or another helper that only gathers outputs) makes its output."""

Observer = Callable[[Any, tuple[Any, ...], dict[str, Any]], None]
"""Called with each ``Output.all`` output and the positional and keyword arguments it gathers."""

_observers: list[Observer] = []
_installed: list[Any] = []  # the SDK's Output.all while the wrapper stands in for it (at most one entry)


def _stand_in(original: Any) -> Callable[..., Any]:
    def all_(*args: Any, **kwargs: Any) -> Any:
        token = GATHERING.set(True)
        try:
            result = original(*args, **kwargs)
            for observe in _observers:
                observe(result, args, kwargs)
            return result
        finally:
            GATHERING.reset(token)

    return all_


@contextmanager
def gathering_all(observer: Observer | None = None) -> Iterator[None]:
    """While this runs, ``pulumi.Output.all`` is the one wrapper; ``observer`` (if any) sees each of its outputs."""
    if not _installed:
        original = pulumi.Output.all
        stand_in = _stand_in(original)
        _installed.append(original)
        pulumi.Output.all = staticmethod(stand_in)  # type: ignore[method-assign,assignment]
        trust(stand_in, instead_of=original)
        owner = stand_in
    else:
        owner = None
    if observer is not None:
        _observers.append(observer)
    try:
        yield
    finally:
        if observer is not None:
            _observers.remove(observer)
        if owner is not None:
            pulumi.Output.all = staticmethod(_installed.pop())  # type: ignore[method-assign,assignment]
            untrust(owner)
