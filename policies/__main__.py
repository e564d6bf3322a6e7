"""Entry point of the ``gpulease-guardrails`` policy pack: make the pack folder importable, build the pack.

The folder is self-contained, as ``pulumi policy publish`` uploads it alone: the rules are the ``guardrails``
package beside this file, the model they share with the CLI is ``gpulease.core`` (the installed package in this
repository's environment, else the generated copy in ``_vendor/``, see ``make vendor``), and everything else
comes from ``requirements.txt``. ``PolicyPack`` starts the analyzer server and never returns, so nothing else
belongs here; the rules live in ``guardrails/`` where tests and ``gpulease plan`` import them, and so does the
servicer both use (``guardrails/servicer.py``).
"""

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
if importlib.util.find_spec("gpulease") is None:
    sys.path.insert(1, str(HERE / "_vendor"))

from guardrails import pack  # noqa: E402
from guardrails.servicer import ServedServicer  # noqa: E402
from pulumi_policy import PolicyPack  # noqa: E402
from pulumi_policy import policy as sdk_policy  # noqa: E402

# PolicyPack builds its analyzer servicer by this module-level name and then serves it until the process ends:
# the pack's own servicer (the SDK's, converting each resource once per request, with the collector kept off what
# the process holds for good; guardrails/servicer.py) takes its place while it is built, and the name is given
# back should PolicyPack ever return.
sdk_servicer = sdk_policy._PolicyAnalyzerServicer
sdk_policy._PolicyAnalyzerServicer = ServedServicer
try:
    PolicyPack(
        name=pack.PACK_NAME,
        policies=pack.all_policies(),
        enforcement_level=pack.PACK_ENFORCEMENT,
        description=pack.PACK_DESCRIPTION,
        display_name=pack.PACK_DISPLAY_NAME,
    )
finally:
    sdk_policy._PolicyAnalyzerServicer = sdk_servicer
