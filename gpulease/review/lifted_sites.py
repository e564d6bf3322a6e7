"""Where a lifted attribute read failed: ``output.attr`` in the program, answered later by the SDK.

``Output.__getattr__`` (``pulumi/output.py``) lifts an attribute read: ``cluster.core.oidc_provider.url`` returns
an output at once and reads ``.url`` in an apply of the SDK's own, when the value resolves. When the value has no
such attribute (``None``: a component output the program's options leave unset), the ``AttributeError`` is raised
in that apply, and no frame of the program is on its traceback: the render's error would name no ``file:line``.
``noting_lifted_sites`` notes, for each lifted read of a program frame, the program's ``file:line`` on the error
the read's output fails with (the first read to fail: the innermost), which ``invoke_sites.at_program_site``
names when the traceback has no program frame.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pulumi

from gpulease.review.invoke_sites import LIFTED_SITE, is_program_path, program_location, site_text
from gpulease.review.static_rule import trust, untrust


def lifted_site(exc: BaseException) -> str | None:
    return getattr(exc, LIFTED_SITE, None)


@contextmanager
def noting_lifted_sites() -> Iterator[None]:
    original = pulumi.Output.__getattr__

    def lifted(self: pulumi.Output[Any], item: str) -> Any:
        out = original(self, item)
        frame = sys._getframe(1)
        if is_program_path(frame.f_code.co_filename):
            site = site_text(program_location(frame))

            def note(data: Any) -> None:
                exc = None if data.cancelled() else data.exception()
                if isinstance(exc, AttributeError) and lifted_site(exc) is None:
                    setattr(exc, LIFTED_SITE, site)

            out._data.add_done_callback(note)
        return out

    pulumi.Output.__getattr__ = lifted  # type: ignore[method-assign]
    trust(lifted, instead_of=original)
    try:
        yield
    finally:
        untrust(lifted)
        pulumi.Output.__getattr__ = original  # type: ignore[method-assign]
