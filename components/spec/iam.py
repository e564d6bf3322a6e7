"""The ``iam`` section of an experiment spec (AWS): the roles the stack creates."""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from gpulease.core.model import SpecModel
from gpulease.core.schema_pattern import schema_pattern

# An IAM managed policy's ARN (IAM identifiers, "IAM ARNs": arn:<partition>:iam::<account>:policy/<path><name>).
POLICY_ARN = re.compile(r"^arn:aws(-cn|-us-gov)?:iam::([0-9]{12}|aws):policy/([A-Za-z0-9_+=,.@-]+/)*"
                        r"[A-Za-z0-9_+=,.@-]{1,128}\Z")
r"""ASCII only: Python's ``\d`` and ``\w`` take other scripts' digits and letters, which IAM (and an ECMA-262
validator reading the schema) do not."""


class IamSpec(SpecModel):
    permissions_boundary: str | None = Field(
        None, max_length=2048, json_schema_extra={"pattern": schema_pattern(POLICY_ARN)},
        description="AWS: the managed policy set as the permissions boundary of every IAM role the stack creates "
        "(the instance role and the deadline role), e.g. arn:aws:iam::123456789012:policy/gpulease-boundary.",
    )

    @field_validator("permissions_boundary")
    @classmethod
    def _policy_arn(cls, value: str | None) -> str | None:
        if value is not None and not POLICY_ARN.match(value):
            raise ValueError(f"{value!r} is not an IAM policy ARN; accepted: e.g. "
                             "arn:aws:iam::123456789012:policy/gpulease-boundary")
        return value
