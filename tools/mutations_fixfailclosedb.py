"""``make mutate`` rows for the fail-closed fixes: the budget rules see every type the cost model reads, a size
is a count of instances, an input that is not a finite number is refused with its site."""

from __future__ import annotations

from tools.mutation_row import Mutation

EQUIVALENCE = ("tests/policies/test_servicer_equivalence.py",)
COUNTS = ("tests/policies/test_counts.py",)
CORPUS = ("tests/review/test_corpus.py",)

MUTATIONS = [
    Mutation("fixfailclosedb", "policies/guardrails/budget.py", "    return bool(type_)\n",
             '    return not type_.startswith("aws:autoscaling/schedule")\n', EQUIVALENCE,
             "the budget rules read every type the cost model reads (a scheduled scale-up included)"),
    Mutation("fixfailclosedb", "policies/guardrails/common.py", "UNIT_TYPES = (*FORMS, CLOUDFORMATION_STACK, *sorted(RESIZERS))",
             "UNIT_TYPES = (*FORMS, CLOUDFORMATION_STACK)", EQUIVALENCE,
             "the compute-unit rules read the scheduled actions that resize a group"),
    Mutation("fixfailclosedb", "gpulease/core/compute/paths.py", "    if whole is None or whole < 0 or whole > MAX_COUNT:",
             "    if whole is None or whole > MAX_COUNT:", COUNTS, "a negative size never cancels another's cost"),
    Mutation("fixfailclosedb", "gpulease/core/compute/paths.py", "    elif isinstance(value, float) and value.is_integer():",
             "    elif isinstance(value, float):", COUNTS, "a fractional size is no count"),
    Mutation("fixfailclosedb", "gpulease/core/compute/paths.py", "    if isinstance(value, bool):\n        whole = None",
             "    if isinstance(value, bool):\n        whole = int(value)", COUNTS, "a boolean is not a count"),
    Mutation("fixfailclosedb", "gpulease/core/compute/paths.py", "value.strip().isascii() and value.strip().isdigit()",
             "value.strip().isdigit()", COUNTS, "fullwidth digits are no count the provider accepts"),
    Mutation("fixfailclosedb", "gpulease/core/compute/units.py",
             "    if scheduled is UNKNOWN or isinstance(scheduled, Uncountable):",
             "    if scheduled is UNKNOWN:", COUNTS, "a scheduled size that is no count leaves the size unknown"),
    Mutation("fixfailclosedb", "gpulease/review/render.py",
             "            if (rewritten or not finite) and (bad := non_finite_paths(request.object)):",
             "            if (rewritten or not finite) and (bad := []):", CORPUS,
             "an input that is not a finite number is refused with its site"),
    Mutation("fixfailclosedb", "gpulease/review/resource_refs.py",
             "                if not isfinite(value.number_value):\n                    finite = False",
             "                if False:\n                    finite = False", CORPUS,
             "the walk that downgrades a registration's references finds its NaN and Infinity"),
]
