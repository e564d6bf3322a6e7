"""A bucket channel for tests whose waits end in seconds: a record the code does not find (written elsewhere, or
not at all) fails the test at once instead of polling for up's 30 minutes, or the verify wait's spec minutes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpulease.ephemeral.channel import BucketChannel, LineSink

WAIT_BOUND_S = 5.0
"""The longest a test's ready or verify wait polls, whatever bound the code under test asks for."""


class BoundedChannel(BucketChannel):
    """``BucketChannel`` with each wait cut to ``bound_s``; the code's own bound still applies when shorter."""

    def __init__(self, client: Any, *, bound_s: float = WAIT_BOUND_S, poll_seconds: float = 0.01, **kwargs: Any):
        super().__init__(client, poll_seconds=poll_seconds, **kwargs)
        self.bound_s = bound_s

    def wait_ready(self, outputs: Mapping[str, Any], timeout_s: float, on_line: LineSink) -> dict[str, Any]:
        return super().wait_ready(outputs, min(timeout_s, self.bound_s), on_line)

    def wait_verify(self, outputs: Mapping[str, Any], timeout_s: float, on_line: LineSink) -> dict[str, Any]:
        return super().wait_verify(outputs, min(timeout_s, self.bound_s), on_line)
