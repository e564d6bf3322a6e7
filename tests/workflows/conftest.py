"""The GPU quotas moto answers (``tests/cli/test_check.ec2_quotas``), for the newcomer's walk."""

from tests.cli.test_check import ec2_quotas  # noqa: F401
