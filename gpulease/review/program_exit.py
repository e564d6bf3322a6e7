"""``os._exit`` in a program under review: it ends the render as ``sys.exit`` does, never the reviewer's process."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


class ProcessExit(SystemExit):
    """``os._exit(code)`` called by the program while it renders."""


@contextmanager
def exit_raises() -> Iterator[None]:
    """While the program runs, ``os._exit`` raises instead of ending the process at once: under a real engine
    the resources the program constructed were already sent to it, while here their registrations are still
    pending (they run on the event loop), and would be lost with the process. Raised, the exit ends the program
    as ``sys.exit`` does: what it registered is finished and reviewed, marked partial."""
    real = os._exit

    def exit_(code: int) -> None:
        raise ProcessExit(code)

    os._exit = exit_  # type: ignore[assignment]
    try:
        yield
    finally:
        os._exit = real
