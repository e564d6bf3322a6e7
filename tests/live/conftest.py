"""The moto bucket of an instance's reports (``test_logs.bucket``), for every test here."""

from tests.live.test_logs import bucket  # noqa: F401
