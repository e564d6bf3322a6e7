"""The bounds of ``gpulease pull``, the same pieces staging uses on the instance: an overall deadline
(``instance.staging_http.Deadline``, default the ``pull`` row of ``instance/bounds.py``, as long as a stage) and a
page cap with loop detection on each prefix's listing (``instance.bounds.PageGuard``, ``MAX_PAGES``).

The deadline is checked before each listing page, before each file and on every progress report of a download, and
it also holds inside one read: a store hands each HTTP answer it reads to ``watch`` while ``armed``, and a timer
shuts the socket of every answer still being read down at the deadline (``urllib3``'s ``HTTPResponse.shutdown``
ends a read blocked in another thread), so a server that trickles a byte at a time or stalls mid-body is cut off,
and the request the SDK retries after that is refused before it is sent. A pull therefore ends within moments of
its deadline (``tests/transfer/test_pull_trickle.py`` measures it against a loopback server that trickles and one
that stalls); the OSS store hands its answers over the same way (``tests/transfer/test_pull_trickle_oss.py``)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from gpulease.core.errors import UserError
from instance import bounds
from instance.staging_http import Deadline, DeadlineError

DEFAULT_DEADLINE_SECONDS = bounds.value("pull")
MAX_PAGES = bounds.MAX_PAGES

Page = tuple[list[tuple[str, int]], str | None]
"""One listing page: its (key, size) rows and the next page's continuation token (None: the last page)."""


class PullDeadlineError(UserError):
    """The pull ran past its deadline (one line: what it was doing, what is kept)."""


class PullBounds:
    def __init__(self, seconds: float = DEFAULT_DEADLINE_SECONDS, max_pages: int = MAX_PAGES) -> None:
        self.seconds, self.max_pages = seconds, max_pages
        self.deadline = Deadline(seconds, "the pull's deadline (--deadline-seconds)")
        self.pages = 0
        self._lock = threading.Lock()
        self._reading: list[Any] = []  # answers whose body may still be read (urllib3 HTTPResponse)
        self._expired = False

    def check(self, doing: str) -> None:
        try:
            self.deadline.check(doing)
        except DeadlineError as exc:
            raise PullDeadlineError(f"pull: {exc}; the files received in full are kept (the one cut off is not): "
                                    "run the same command again to go on, or give a longer --deadline-seconds") from None

    def past(self) -> bool:
        return self.deadline.left() <= 0

    @contextlib.contextmanager
    def armed(self) -> Iterator[None]:
        """While inside: at the deadline, every answer handed to ``watch`` that is still open is shut down."""
        timer = threading.Timer(max(0.0, self.deadline.left()), self._expire)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    def watch(self, response: Any) -> None:
        """An HTTP answer about to be read: shut down at the deadline (at once when the deadline has passed)."""
        with self._lock:
            self._reading = [r for r in self._reading if not r.closed]
            if not self._expired:
                self._reading.append(response)
                return
        _shut(response)

    def _expire(self) -> None:
        with self._lock:
            self._expired, reading, self._reading = True, self._reading, []
        for response in reading:
            _shut(response)

    def listing(self, what: str, read: Callable[[str | None], Page]) -> Iterator[tuple[str, int]]:
        """Every row of a paged listing, ``read(token)`` per page; a page token seen before or more than
        ``max_pages`` pages is one clear error."""
        guard = bounds.PageGuard(what, self.max_pages)
        token: str | None = None
        while True:
            self.check(f"listing {what}")
            problem = guard.problem(token or "")
            if problem:
                raise UserError(f"pull: {problem}")
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


def _shut(response: Any) -> None:
    # A response already released to its pool or closed has no read to end.
    with contextlib.suppress(Exception):
        response.shutdown()

