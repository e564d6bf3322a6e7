"""What a program reads about the preview itself, which makes what it does at update differ from what the review
sees.

- ``pulumi.runtime.is_dry_run()`` (also as ``pulumi.runtime.settings.is_dry_run``) is true while the review
  renders, a preview (``pulumi/runtime/settings.py``: "Returns whether or not we are currently doing a preview"),
  and false during ``pulumi up``'s update: ``if not pulumi.runtime.is_dry_run(): <a GPU>`` registers it at update
  only. A call from a program frame makes the review partial: "the program asks whether it runs as a preview
  (file:line): what it does at update is not seen".
- ``Output.future()`` (``pulumi/output.py``) resolves to ``None`` for an output whose value is unknown at preview
  (or to the marker with ``with_unknowns``): ``mk(await output.future())`` in a task the program schedules calls
  ``mk`` at update with the real value, and no apply is there to judge. A call from a program frame on an output
  that resolves unknown offline makes the review partial: "the program awaits the value of an output unknown
  offline (file:line): what it does with the value at update is not seen".

Only a program frame counts (the SDK and the review call both constantly): the caller's code file is decided
once per file (``invoke_sites.program_location``'s table), so a call from the SDK costs a dictionary look-up.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pulumi
import pulumi.runtime.settings as settings
from pulumi.output import _OutputData

from gpulease.review.invoke_sites import is_program_file, program_location, site_text
from gpulease.review.static_rule import trust, untrust


def dry_run_line(site: str | None) -> str:
    where = f" ({site})" if site else ""
    return (f"the program asks whether it runs as a preview{where}: what it does at update is not seen; accepted: "
            "a program that does the same at preview and at update")


def future_line(site: str | None) -> str:
    where = f" ({site})" if site else ""
    return (f"the program awaits the value of an output unknown offline{where}: what it does with the value at update "
            "is not seen; accepted: an apply, or a value known offline")


@contextmanager
def watching_preview_reads(errors: list[str], rendering: Any = None) -> Iterator[None]:
    """While the program renders, a program frame's ``is_dry_run()`` or ``future()`` of an output unknown offline
    adds its line to ``errors`` and sets ``rendering.unseen`` (module doc)."""
    decided: dict[str, bool] = {}

    def program_caller() -> Any:
        """The frame that called the stand-in's caller, when it is the program's (else ``None``)."""
        frame = sys._getframe(2)
        filename = frame.f_code.co_filename
        mine = decided.get(filename)
        if mine is None:
            mine = decided[filename] = is_program_file(filename)
        return frame if mine else None

    def unseen(line: str) -> None:
        if line not in errors:
            errors.append(line)
        if rendering is not None:
            rendering.unseen = True

    original_dry_run: Callable[[], bool] = settings.is_dry_run
    original_future = pulumi.Output.future

    def is_dry_run() -> bool:
        if (frame := program_caller()) is not None:
            unseen(dry_run_line(site_text(program_location(frame))))
        return original_dry_run()

    def future(self: pulumi.Output[Any], with_unknowns: bool | None = None) -> Any:
        if (frame := program_caller()) is not None:
            site = site_text(program_location(frame))

            async def watched() -> _OutputData[None]:  # an output of its own: the SDK waits for it at the end
                try:
                    known = (await self._data).is_known
                except Exception:  # the program's own await raises it
                    known = True
                if not known:
                    unseen(future_line(site))
                return _OutputData(resources=set(), value=None, is_known=True, is_secret=False)

            pulumi.Output._from_data(watched())  # type: ignore[attr-defined]
        return original_future(self, with_unknowns)

    settings.is_dry_run = pulumi.runtime.is_dry_run = is_dry_run  # type: ignore[assignment]
    pulumi.Output.future = future  # type: ignore[method-assign,assignment]
    # The review's own stand-ins: neither a replaced helper nor a callback that may register (``static_rule``).
    trust(is_dry_run, instead_of=original_dry_run)
    trust(future, instead_of=original_future)
    try:
        yield
    finally:
        untrust(is_dry_run)
        untrust(future)
        settings.is_dry_run = pulumi.runtime.is_dry_run = original_dry_run  # type: ignore[assignment]
        pulumi.Output.future = original_future  # type: ignore[method-assign]
