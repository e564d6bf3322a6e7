"""The bounds of ``gpulease pull``, the same pieces staging uses on the instance: an overall deadline
(``instance.staging_http.Deadline``, default the ``pull`` row of ``instance/bounds.py``, as long as a stage) checked
before each listing page, before each file and on every progress report of a download, and a page cap with loop
detection on each prefix's listing (``instance.bounds.PageGuard``, ``MAX_PAGES``). One read that stalls is bounded
by the SDK's own read timeout (botocore: 60 s; the OSS SDK: its readwrite timeout), so a pull ends at most that long
after its deadline."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from gpulease.core.errors import UserError
from instance import bounds
from instance.staging_http import Deadline, DeadlineError

DEFAULT_DEADLINE_SECONDS = bounds.value("pull")
MAX_PAGES = bounds.MAX_PAGES

Page = tuple[list[tuple[str, int]], str | None]
"""One listing page: its (key, size) rows and the next page's continuation token (None: the last page)."""


class PullBounds:
    def __init__(self, seconds: float = DEFAULT_DEADLINE_SECONDS, max_pages: int = MAX_PAGES) -> None:
        self.seconds, self.max_pages = seconds, max_pages
        self.deadline = Deadline(seconds, "the pull's deadline (--deadline-seconds)")
        self.pages = 0

    def check(self, doing: str) -> None:
        try:
            self.deadline.check(doing)
        except DeadlineError as exc:
            raise UserError(f"gpulease pull: {exc}; what was received is kept: run the same command again to "
                            "resume, or give a longer --deadline-seconds") from None

    def listing(self, what: str, read: Callable[[str | None], Page]) -> Iterator[tuple[str, int]]:
        """Every row of a paged listing, ``read(token)`` per page; a page token seen before or more than
        ``max_pages`` pages is one clear error."""
        guard = bounds.PageGuard(what, self.max_pages)
        token: str | None = None
        while True:
            self.check(f"listing {what}")
            problem = guard.problem(token or "")
            if problem:
                raise UserError(f"gpulease pull: {problem}")
            self.pages += 1
            rows, token = read(token)
            yield from rows
            if not token:
                return

    def progress(self, key: str, advance: Callable[[int], Any]) -> Callable[[int], None]:
        """A progress callback that also ends a download past the deadline (a trickling server is cut off)."""

        def report(n: int) -> None:
            advance(n)
            self.check(f"downloading {key}")

        return report

    def report(self) -> dict[str, Any]:
        return {"deadlineSeconds": self.seconds, "maxPages": self.max_pages, "pages": self.pages}


def positive_seconds(text: str) -> float:
    """``--deadline-seconds``: a finite number of seconds above 0 and at most a week."""
    import argparse
    import math

    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (0 < seconds <= 7 * 24 * 3600):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds; accepted: above 0, at most 604800 "
                                         f"(a week), default {DEFAULT_DEADLINE_SECONDS:g}")
    return seconds

