"""The fixtures every test folder may use, registered as plugins (helpers are imported from ``tests.support``)."""

from __future__ import annotations

from datetime import datetime

import pytest

from tests.support.clock import FIXED_NOW

pytest_plugins = (
    "tests.support.inventory", "tests.support.alicloud_inventory", "tests.support.prices", "tests.support.clean_tree",
    "tests.support.kept_stack", "tests.support.plan_output",
)
"""moto's server and the ``aws`` clients on it; the Alibaba Cloud stub and the ``ali`` clients on it; the price
fixtures (catalog, a refreshed price file, the priced example stack); a stack kept with its bucket; the check that the suite leaves the checkout
as it found it."""


@pytest.fixture
def now() -> datetime:
    return FIXED_NOW


@pytest.fixture(autouse=True)
def _no_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """Piped output follows ``COLUMNS`` (pytest-xdist's workers set 80): tests read the default piped width unless
    they set one; the narrow screens have tests of their own (``tests/cli/test_screens.py``)."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture(autouse=True)
def _no_user_catalog_folder(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The user's own catalog folder (~/.config/gpulease/catalog) never prices a test: an empty one instead."""
    empty = tmp_path_factory.getbasetemp() / "no-user-catalog"
    empty.mkdir(exist_ok=True)
    monkeypatch.setenv("GPULEASE_CATALOG_DIR", str(empty))
