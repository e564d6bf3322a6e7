"""Real programs the tests drive (tmux, zsh): ``make setup`` installs them from Debian. Where one is missing, a
test needing it fails in CI (``CI`` set), never skips there; on a developer's machine it is skipped with the fix."""

from __future__ import annotations

import os
import shutil

import pytest


def required(program: str) -> str:
    """The path of ``program``; missing: the test fails under CI and is skipped elsewhere, saying how to install it."""
    found = shutil.which(program)
    if found:
        return found
    message = f"{program} is not installed here (make setup installs it from Debian's packages)"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message, allow_module_level=True)
    raise AssertionError("unreachable")  # pytest.skip raises
