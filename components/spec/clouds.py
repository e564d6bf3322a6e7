"""The clouds a spec may name, each with its rules (``components/<cloud>/spec.py``): adding a cloud adds a line here.

The program's registry of cloud implementations (``components.experiment.CLOUDS``) names the same clouds; a test
holds the two together.
"""

from __future__ import annotations

from typing import Literal

from components.alicloud.spec import RULES as ALICLOUD
from components.aws.spec import RULES as AWS
from components.spec_rules import CloudSpecRules

SPEC_RULES: dict[str, CloudSpecRules] = {AWS.name: AWS, ALICLOUD.name: ALICLOUD}

Cloud = Literal[AWS.name, ALICLOUD.name]  # type: ignore[valid-type]  (the names above, as the schema's enum)


def all_key_types() -> tuple[str, ...]:
    """Every OpenSSH key type some cloud imports."""
    return tuple(sorted({t for rules in SPEC_RULES.values() for t in rules.key_types}))
