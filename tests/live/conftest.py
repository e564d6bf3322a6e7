"""The moto bucket of an instance's reports (``test_logs.bucket``) and a running stack as the cloud holds it
(``test_status.running``), for every test here."""

from tests.live.test_logs import bucket  # noqa: F401
from tests.live.test_status import running  # noqa: F401
