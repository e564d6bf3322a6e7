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
- ``await output.is_known()``, the sibling of ``future()``, is false at preview for such an output and true at
  update: the same, "the program awaits whether it knows an output unknown offline (file:line): ...".
- ``await ref.get_output_details(name)`` (``pulumi/stack_reference.py``) awaits the stack output's ``future()``
  itself, from the SDK: called from a program frame for an output the mocks do not answer (the referenced stack's
  value, unknown offline: ``unknown_compute.unknown_stack_outputs``), it answers details with no value and the
  review is partial with the line of ``future()``.

Only a program frame counts (the SDK and the review call both constantly): the caller's code file is decided
once per file (``invoke_sites.program_location``'s table), so a call from the SDK costs a dictionary look-up.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
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


def future_line(site: str | None, read: str = "the value of") -> str:
    where = f" ({site})" if site else ""
    return (f"the program awaits {read} an output unknown offline{where}: what it does with the value at update "
            "is not seen; accepted: an apply, or a value known offline")


async def _answered(ref: pulumi.StackReference, name: Any) -> bool:
    """Whether the mocks answer the stack output ``name`` (the output map the SDK reads, not the program's view)."""
    outputs = ref.__dict__.get("outputs")
    found = await outputs.future() if outputs is not None else None
    return isinstance(found, Mapping) and name in found


@contextmanager
def watching_preview_reads(errors: list[str], rendering: Any = None) -> Iterator[None]:
    """While the program renders, a program frame's ``is_dry_run()``, or ``future()``, ``is_known()`` or
    ``get_output_details()`` of an output unknown offline, adds its line to ``errors`` and sets ``rendering.unseen`` (module doc)."""
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
    original_is_known = pulumi.Output.is_known
    original_details = pulumi.StackReference.get_output_details

    def is_dry_run() -> bool:
        if (frame := program_caller()) is not None:
            unseen(dry_run_line(site_text(program_location(frame))))
        return original_dry_run()

    def watch(output: pulumi.Output[Any], frame: Any, read: str) -> None:
        site = site_text(program_location(frame))

        async def watched() -> _OutputData[None]:  # an output of its own: the SDK waits for it at the end
            try:
                known = (await output._data).is_known
            except Exception:  # the program's own await raises it
                known = True
            if not known:
                unseen(future_line(site, read))
            return _OutputData(resources=set(), value=None, is_known=True, is_secret=False)

        pulumi.Output._from_data(watched())  # type: ignore[attr-defined]

    def future(self: pulumi.Output[Any], with_unknowns: bool | None = None) -> Any:
        if (frame := program_caller()) is not None:
            watch(self, frame, "the value of")
        return original_future(self, with_unknowns)

    def is_known(self: pulumi.Output[Any]) -> Any:
        if (frame := program_caller()) is not None:
            watch(self, frame, "whether it knows")
        return original_is_known(self)

    def get_output_details(self: pulumi.StackReference, name: str) -> Any:
        if (frame := program_caller()) is None or not original_dry_run():
            return original_details(self, name)
        site = site_text(program_location(frame))

        async def details() -> Any:
            if await _answered(self, name):
                return await original_details(self, name)
            unseen(future_line(site))
            return pulumi.StackReferenceOutputDetails()

        return details()

    settings.is_dry_run = pulumi.runtime.is_dry_run = is_dry_run  # type: ignore[assignment]
    pulumi.Output.future = future  # type: ignore[method-assign,assignment]
    pulumi.Output.is_known = is_known  # type: ignore[method-assign,assignment]
    pulumi.StackReference.get_output_details = get_output_details  # type: ignore[method-assign,assignment]
    # The review's own stand-ins: neither a replaced helper nor a callback that may register (``static_rule``).
    stand_ins = ((is_dry_run, original_dry_run), (future, original_future), (is_known, original_is_known),
                 (get_output_details, original_details))
    for stand_in, original in stand_ins:
        trust(stand_in, instead_of=original)
    try:
        yield
    finally:
        for stand_in, _ in stand_ins:
            untrust(stand_in)
        settings.is_dry_run = pulumi.runtime.is_dry_run = original_dry_run  # type: ignore[assignment]
        pulumi.Output.future = original_future  # type: ignore[method-assign]
        pulumi.Output.is_known = original_is_known  # type: ignore[method-assign]
        pulumi.StackReference.get_output_details = original_details  # type: ignore[method-assign]
