"""``make mutate`` rows for figures that hide an unpriced item (every sum of the stack and of each experiment that
includes one is unknown: JSON null with its reason, "unknown" in text, never the lower bound), and for each resource
priced in its own provider's region."""

from __future__ import annotations

from tools.mutation_row import Mutation

AREA = "fc4"
COST_TEXT = ("tests/review/test_cost_text.py",)
ESTIMATE = "gpulease/core/cost/estimate.py"
LINES = "gpulease/core/cost/lines.py"

REGIONS = ("tests/core/test_cost.py",)
PACK_REGION = ("tests/policies/test_fail_closed.py",)

COUNTS = ("tests/policies/test_counts.py",)
ML = "gpulease/core/compute/aws_ml_forms.py"

CFN_CORPUS = ("tests/review/test_corpus.py",)

MUTATIONS: list[Mutation] = [
    Mutation(AREA, "policies/guardrails/instance.py", "    if opaque:\n        found.append(not_judged(",
             "    if False:\n        found.append(not_judged(", CFN_CORPUS,
             "a template's metadata setting the pack cannot resolve is reported"),
    Mutation(AREA, "policies/guardrails/instance.py", "for props in (inner.props, *chosen) for problem",
             "for props in (inner.props,) for problem", CFN_CORPUS,
             "every value a template lists for a metadata setting is judged"),
    Mutation(AREA, "policies/guardrails/storage.py", "        if opaque:\n            report(not_judged(",
             "        if False:\n            report(not_judged(", CFN_CORPUS,
             "a template's volume encryption the pack cannot resolve is reported"),
    Mutation(AREA, "policies/guardrails/storage.py", "for props in (e.props, *chosen)", "for props in (e.props,)",
             CFN_CORPUS, "every value a template lists for a volume's encryption is judged"),
    Mutation(AREA, ML, "    if isinstance(cap, Uncountable):\n        return cap", "    if False:\n        return cap",
             COUNTS, "a Batch vCPU cap that is no count leaves the size unknown"),
    Mutation(AREA, ML, "                    return size  # never a negative term", "                    pass  # never a negative term",
             COUNTS, "a SageMaker variant count that is no count leaves the size unknown"),
    Mutation(AREA, "gpulease/core/compute/units.py",
             "    if isinstance(desired, Uncountable) and not isinstance(capacity, Uncountable):",
             "    if False:", COUNTS, "a desired size that is no count leaves the size unknown"),
    Mutation(AREA, "gpulease/core/compute/kubernetes_forms.py",
             "        if given is not None and given is not UNKNOWN and quantity(given) is None:",
             "        if False:", COUNTS, "a Karpenter limit that is no quantity leaves the size unknown"),
    Mutation(AREA, "gpulease/core/compute/kubernetes_forms.py",
             "        return float(value) if math.isfinite(value) and value >= 0 else None",
             "        return float(value) if math.isfinite(value) else None", COUNTS,
             "a negative Karpenter limit is no quantity"),
    Mutation(AREA, "gpulease/core/compute/alicloud_container_forms.py",
             "    instances = count(config, \"metadata.instance\", shown=\"serviceConfig.metadata.instance\")",
             "    instances = number(read(config, \"metadata.instance\"))", COUNTS,
             "a PAI instance count goes through the count rule"),
    Mutation(AREA, ESTIMATE, "    if r.options.get(\"explicitProvider\"):\n        return None",
             "    if False:\n        return None", REGIONS,
             "an explicit provider without a region is priced in none, never the stack's region"),
    Mutation(AREA, ESTIMATE, "    return regions.get(r.cloud) if r.cloud else default",
             "    return regions.get(r.cloud or \"\") or default", REGIONS,
             "a resource is never priced in the other cloud's region"),
    Mutation(AREA, "policies/guardrails/budget.py",
             "        if region is None or cloud not in (\"aws\", \"alicloud\") or _explicit(r):",
             "        if region is None or cloud not in (\"aws\", \"alicloud\"):", PACK_REGION,
             "the pack takes a cloud's region from its default provider only"),
    Mutation(AREA, ESTIMATE, "        hourly_reason=_joined(hourly_missing),\n        expected_reason",
             "        hourly_reason=None,\n        expected_reason", COST_TEXT,
             "the stack's hourly figure with an unpriced item is unknown"),
    Mutation(AREA, ESTIMATE, "                hourly_reason=_joined(hourly_missing),",
             "                hourly_reason=None,", COST_TEXT,
             "an experiment's hourly figure with an unpriced item is unknown"),
    Mutation(AREA, ESTIMATE, "                expected_reason=_joined([*hourly_missing, *no_runtime]),",
             "                expected_reason=None,", COST_TEXT,
             "an experiment's expected figure with an unpriced item is unknown"),
    Mutation(AREA, ESTIMATE, "        expected_reason=_joined([*hourly_missing, *no_runtime]),\n        after",
             "        expected_reason=None,\n        after", COST_TEXT,
             "the stack's expected figure with an unpriced item is unknown"),
    Mutation(AREA, ESTIMATE, "            if line.retained and line.hourly_usd is None]",
             "            if False]", COST_TEXT, "a retained unpriced item makes the after-destroy figure unknown"),
    Mutation(AREA, LINES, "            figures.update(dict.fromkeys(keys))", "            pass", COST_TEXT,
             "an unknown figure is null in JSON"),
]
