"""The fixtures every test folder may use, registered as plugins (helpers are imported from ``tests.support``)."""

from __future__ import annotations

from datetime import datetime

import pytest

from tests.support.clock import FIXED_NOW

pytest_plugins = ("tests.support.inventory", "tests.support.alicloud_inventory", "tests.support.prices")
"""moto's server and the ``aws`` clients on it; the Alibaba Cloud stub and the ``ali`` clients on it; the price
fixtures (catalog, a refreshed price file, the priced example stack)."""


@pytest.fixture
def now() -> datetime:
    return FIXED_NOW
