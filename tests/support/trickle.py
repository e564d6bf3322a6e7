"""A body sent a byte at a time, as a server that trickles does: the loopback servers of the deadline tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import BinaryIO

PAUSE_SECONDS = 0.05


def send_slowly(out: BinaryIO, body: bytes, end: float, stop: Callable[[], bool] = lambda: False) -> bool:
    """``body`` to ``out`` one byte every ``PAUSE_SECONDS`` until ``time.monotonic()`` passes ``end`` or ``stop()``
    is true (a bound of the server's own, so that a regression fails instead of hanging). False when it stopped
    early (the bound, ``stop``, or the client gone), True when the whole body was sent."""
    for byte in body:
        if stop() or time.monotonic() > end:
            return False
        try:
            out.write(bytes([byte]))
            out.flush()
        except OSError:
            return False
        time.sleep(PAUSE_SECONDS)
    return True
