"""The ``gpulease`` command (console script ``gpulease = "gpulease.cli:main"``; ``python -m gpulease`` too): one
module per subcommand, shared helpers in ``common``, the entry point in ``main``."""

from __future__ import annotations

from gpulease.cli.main import main

__all__ = ["main"]
