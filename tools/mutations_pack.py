"""``make mutate`` rows for the policy pack's checks on foreign programs: the compute forms beyond instances and
groups, GPU compute no form reads, cost that cannot be priced, and the checks a careless edit would loosen."""

from __future__ import annotations

from tools.mutation_row import Mutation

INSTANCE = ("tests/policies/test_instance.py",)
ALERTS = ("tests/policies/test_alerts.py",)
NETWORK = ("tests/policies/test_network.py",)
DEADLINES = ("tests/policies/test_deadline_forms.py",)
UNJUDGED = ("tests/policies/test_unjudged.py",)
STORAGE = ("tests/policies/test_storage.py",)
COST = ("tests/core/test_cost_forms.py",)

MUTATIONS: list[Mutation] = [
    # --- checks already in the pack, pinned -------------------------------------------------------------------
    Mutation("pack", "policies/guardrails/instance.py",
             'found.append(f"{what} leaves {meta.tokens} unset: {meta.unset}; accepted: {meta.how}")', "pass", INSTANCE,
             "a missing httpTokens is reported as unset"),
    Mutation("pack", "policies/guardrails/alerts.py", "elif amount is None or amount > budget * 1.000001:",
             "elif amount is None:", ALERTS, "a budget alert's limit may not exceed the budget tag"),
    Mutation("pack", "policies/guardrails/alerts.py", "elif not notifies:", "elif False:", ALERTS,
             "a budget alert that notifies nobody does not count"),
    Mutation("pack", "policies/guardrails/deadlines.py",
             "elif expires is not None and when > expires + grace:", "elif False:", DEADLINES,
             "a group's scheduled action after expires-at is late"),
    Mutation("pack", "policies/guardrails/deadlines.py",
             'elif d.kind == "expiry" and expires is not None and when > expires + grace:', "elif False:", DEADLINES,
             "a form's expiry after expires-at is late"),
    Mutation("pack", "policies/guardrails/common.py", "return [p for p in ports if lo <= p <= hi]",
             "return [p for p in ports if lo == p == hi]", NETWORK,
             "a security group rule's port range containing 22 opens SSH"),
    # --- GPU compute no compute form reads ---------------------------------------------------------------------
    Mutation("pack", "policies/guardrails/unjudged.py", "hits = gpu_mentions(c.plain(args.props))", "hits = []",
             UNJUDGED, "an unknown type asking for GPUs is a mandatory finding"),
    Mutation("pack", "gpulease/core/compute/scan.py", "if _type_key(key) or key in NODE_LABELS:",
             "if key in NODE_LABELS:", UNJUDGED, "instanceType / instanceTypes / instanceClass inputs are scanned"),
    Mutation("pack", "gpulease/core/compute/scan.py", 'if "key" in node and (found := _requirement(node)):',
             "if False:", UNJUDGED, "Kubernetes node requirements on GPU types are scanned"),
    Mutation("pack", "gpulease/core/compute/scan.py", "if isinstance(count, float) and count > 0:", "if False:",
             UNJUDGED, "GPU resource requests (nvidia.com/gpu) are scanned"),
    Mutation("pack", "gpulease/core/compute/accelerators.py",
             "    bare = instance_type.removeprefix(SAGEMAKER_PREFIX)\n    if bare.startswith(DEDICATED_HOST_PREFIX):",
             "    bare = instance_type\n    if bare.startswith(DEDICATED_HOST_PREFIX):", UNJUDGED, "SageMaker ml.* GPU types are guarded"),
    # --- the new compute forms --------------------------------------------------------------------------------
    Mutation("pack", "gpulease/core/compute/aws_ml_forms.py", 'requires={"ComputeResources.MaxvCpus": 0},',
             "requires={},", DEADLINES, "a Batch environment's scheduled update must bring maxvCpus to zero"),
    Mutation("pack", "gpulease/core/compute/aws_ml_forms.py", "return float(math.ceil(cap / min(vcpus)))",
             "return cap", COST, "a Batch environment counts maxvCpus over the types' vCPUs"),
    Mutation("pack", "gpulease/core/compute/kubernetes_forms.py",
             "bounds.append(math.ceil(gpus / min(gpu_counts)))", "pass", COST,
             "a NodePool's GPU limit bounds its nodes"),
    Mutation("pack", "gpulease/core/compute/alicloud_container_forms.py",
             'return f"{path}[{i}].gpu={gpus:g}"', "return None", COST, "an ECI GPU container is guarded"),
    Mutation("pack", "policies/guardrails/storage.py", "found.append(disk.missing)", "pass", STORAGE,
             "a launch template without block device mappings is flagged"),
    # --- cost that cannot be priced ---------------------------------------------------------------------------
    Mutation("pack", "gpulease/core/cost/estimate.py", "worst_case_known=not unknown and not pricer.unknown,",
             "worst_case_known=not unknown,", COST, "a resource type the estimate does not price makes it unknown"),
    Mutation("pack", "gpulease/core/cost/lines.py", '        figures["worst_case_usd"] = None', "        pass", COST,
             "an unknown worst case is null in JSON"),
    Mutation("pack", "gpulease/core/cost/estimate.py",
             "    pricer.region = _region_of(r, regions, default)",
             "    pricer.region = r.region or default", COST, "each resource is priced in its own cloud's region"),
]
