"""A remote or user value for a rich console with markup on: shown as itself, never as styling or a terminal code."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from gpulease.core.printable import printable


def shown(value: Any) -> str:
    """``value`` as text that reads as itself on a terminal (``printable``) and in rich markup (``escape``)."""
    return escape(printable(str(value)))
