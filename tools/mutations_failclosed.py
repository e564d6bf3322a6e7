"""``make mutate`` rows for the pack failing closed on real programs: CloudFormation templates read, instance
types in any field and spelling, compute whose types are not visible, acceptances by URN, duplicate URNs, escaped
names, and costs never known when they are not."""

from __future__ import annotations

from tools.mutation_row import Mutation

CFN = ("tests/policies/test_cloudformation.py",)
UNJUDGED = ("tests/policies/test_unjudged.py",)
UNSEEN = ("tests/policies/test_unseen_types.py",)
COST = ("tests/review/test_cost_text.py",)
PRINTABLE = ("tests/review/test_printable.py",)
CORPUS = ("tests/review/test_corpus.py",)
AREA = "failclosed"

MUTATIONS: list[Mutation] = [
    Mutation(AREA, "gpulease/core/compute/units.py", "            out += embedded(res)", "            pass", CFN,
             "the compute a CloudFormation stack's template creates is judged"),
    Mutation(AREA, "policies/guardrails/common.py",
             "            or r.resource_type == CLOUDFORMATION_STACK or r.resource_type in RESIZERS]",
             "            or r.resource_type in RESIZERS]",
             CFN, "the pack's compute units include CloudFormation stacks"),
    Mutation(AREA, "gpulease/core/compute/cloudformation.py",
             'return Unreadable(f"its template is at templateUrl {url!r}',
             'return [] if url else Unreadable(f"its template is at templateUrl {url!r}',
             CFN, "a templateUrl is a template the pack cannot judge"),
    Mutation(AREA, "policies/guardrails/unjudged.py", "        if hits := gpu_mentions(inner.props) or gpu_mentions(chosen):",
             "        if hits := []:", CFN, "a template's GPU resource of a type no form reads is unjudged compute"),
    Mutation(AREA, "gpulease/core/compute/accelerators.py",
             "return instance_type.strip().lower() if isinstance(instance_type, str) else instance_type",
             "return instance_type", UNJUDGED, "types in upper case or padded are recognised as GPU types"),
    Mutation(AREA, "gpulease/core/compute/accelerators.py", "    if bare.startswith(DEDICATED_HOST_PREFIX):",
             "    if False:", UNJUDGED, "Alibaba ddh.<GPU family> dedicated host types are accelerated"),
    Mutation(AREA, "gpulease/core/compute/accelerators.py",
             'return bare.startswith(("stream.graphics-", "stream.graphics."))', "return False", UNJUDGED,
             "AppStream graphics types are accelerated"),
    Mutation(AREA, "gpulease/core/compute/scan.py", "return key in TYPE_KEYS or key.endswith(TYPE_SUFFIXES)",
             "return key in TYPE_KEYS", UNJUDGED, "every *InstanceType / *HostType input is scanned"),
    Mutation(AREA, "policies/guardrails/common.py",
             "return any(urn in entries or urn_tail(urn) in entries for urn in urns)",
             "return any(urn in entries or urn_tail(urn) in entries or urn.rsplit('::', 1)[-1] in entries "
             "for urn in urns)", UNJUDGED,
             "acceptUnjudged never matches a bare name"),
    Mutation(AREA, "policies/guardrails/unjudged.py", "            and type_ not in MODELLED_COMPONENTS)", ")",
             UNJUDGED, "a modelled component is judged by its children, not reported itself"),
    Mutation(AREA, "policies/guardrails/unjudged.py", "    if named:\n", "    if False:\n", UNSEEN,
             "a form launching from a template outside the stack is compute the pack cannot judge"),
    Mutation(AREA, "policies/guardrails/unjudged.py", "    if unit.form.type_reader is not None:\n",
             "    if False:\n", UNSEEN, "a NodePool allowing any instance type is compute the pack cannot judge"),
    Mutation(AREA, "gpulease/core/compute/alicloud_forms.py", "            return value\n    return UNKNOWN\n",
             "            return value\n    return 0\n", ("tests/policies/test_node_pool_size.py",),
             "an ACK node pool naming no size has an unknown size, never 0"),
    Mutation(AREA, "gpulease/core/compute/alicloud_forms.py",
             "    if rt.flag(enable) or (enable is None and high is not None):", "    if rt.flag(enable):",
             ("tests/policies/test_node_pool_size.py",), "a scaling config with enable unset may scale to max_size"),
    Mutation(AREA, "gpulease/review/render.py", "        if response.urn in self._urns:", "        if False:",
             CORPUS, "a duplicate URN makes the review partial"),
    Mutation(AREA, "gpulease/review/engine.py", "    if rendering.partial:\n        cost.worst_case_known = False",
             "    if False:\n        cost.worst_case_known = False", COST, "a partial review's worst case is unknown"),
    Mutation(AREA, "gpulease/core/cost/estimate.py",
             "    unpriced = {key: list(found) for key, found in pricer.unknown_of.items()}", "    unpriced = {}", COST,
             "the hourly cost is unknown while compute is unpriced, with what has no price"),
    Mutation(AREA, "gpulease/core/printable.py",
             "    return _ESCAPED.sub(lambda m: _shown(m.group(), named) if m.group() not in keep and unsafe(m.group())\n"
             "                        else m.group(), text)", "    return text",
             PRINTABLE, "control characters in names are escaped in report lines"),
]
