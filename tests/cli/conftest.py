"""Every command test prices with the shipped catalog unless it says otherwise."""

from __future__ import annotations

import pytest

# Fixtures of the command tests that other command tests use too (the moto bucket of an instance's reports, a
# deployed stack, a stubbed review, the recording backend).
from tests.cli.test_check import pulumi_on_path  # noqa: F401
from tests.cli.test_down import deployed, review  # noqa: F401
from tests.cli.test_init import key_file, reviewed  # noqa: F401
from tests.cli.test_up import backend, passing_review  # noqa: F401
from tests.live.test_logs import bucket  # noqa: F401
from tests.live.test_nodes import cluster  # noqa: F401
from tests.live.test_status import running  # noqa: F401


@pytest.fixture(autouse=True)
def _shipped_catalog(no_catalog_overrides: None) -> None:
    pass

