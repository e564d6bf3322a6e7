"""Every command test prices with the shipped catalog unless it says otherwise."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _shipped_catalog(no_catalog_overrides: None) -> None:
    pass

