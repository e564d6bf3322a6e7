"""Errors in threads a program starts: one line of the render's error, never a traceback and a clean pass.

The SDK registers resources on the program's event loop; a program that registers one from a thread of its own
(``threading.Thread``) fails there (no event loop in that thread), and Python prints the traceback on stderr
(``threading.excepthook``) while the main thread goes on: the resource is never registered, so the review would
pass without it. ``thread_errors`` replaces the hook while the program runs: each failure becomes one line naming
the program's ``file:line``, and the render is partial (or an error when nothing was registered).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from gpulease.review.invoke_sites import failure_site

SHOWN = 80


def describe(exc: BaseException, base: str | None = None) -> str:
    """The line for one thread's failure."""
    site = failure_site(exc, base)
    reason = " ".join(f"{type(exc).__name__}: {exc}".split())
    reason = reason if len(reason) <= SHOWN else f"{reason[:SHOWN - 3]}..."
    return (f"{f'{site}: ' if site else ''}a thread the program started failed ({reason}); GPU compute may be "
            "here: what it would have registered was not reviewed; accepted: register resources from the "
            "program's main thread")


@contextmanager
def thread_errors(sink: list[str], base: str | None = None) -> Iterator[None]:
    """While the program runs, a thread's uncaught exception is added to ``sink`` as one line (not printed)."""
    previous = threading.excepthook

    def hook(args: Any) -> None:
        if args.exc_type is SystemExit or args.exc_value is None:
            return
        sink.append(describe(args.exc_value, base))

    threading.excepthook = hook
    try:
        yield
    finally:
        threading.excepthook = previous
