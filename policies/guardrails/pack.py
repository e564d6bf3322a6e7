"""The ``gpulease-guardrails`` pack: its name and every rule, in the order reports list them."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, Policy

from . import access, alerts, budget, exposure, instance, network, runtime, sources, spot, storage, unjudged

PACK_NAME = "gpulease-guardrails"
PACK_DISPLAY_NAME = "gpulease guardrails"
PACK_DESCRIPTION = (
    "No forgotten GPU, no open SSH, no spot job without checkpoints: deadlines, budgets and a security "
    "baseline for GPU training stacks on AWS and Alibaba Cloud."
)
# Every rule sets its own level; this only applies to a rule that does not.
PACK_ENFORCEMENT = EnforcementLevel.ADVISORY

RULE_MODULES = (runtime, budget, spot, network, storage, instance, access, exposure, sources, alerts, unjudged)


def all_policies() -> list[Policy]:
    return [policy for module in RULE_MODULES for policy in module.POLICIES]
