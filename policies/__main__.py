"""Entry point of the ``gpulease-guardrails`` policy pack: put the project root on the path, build the pack.

``PolicyPack`` starts the analyzer server and never returns, so nothing else belongs here; the rules live in
``policies/guardrails/`` where tests and ``gpulease plan`` import them.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pulumi_policy import PolicyPack  # noqa: E402

from policies.guardrails import pack  # noqa: E402

PolicyPack(
    name=pack.PACK_NAME,
    policies=pack.all_policies(),
    enforcement_level=pack.PACK_ENFORCEMENT,
    description=pack.PACK_DESCRIPTION,
    display_name=pack.PACK_DISPLAY_NAME,
)
