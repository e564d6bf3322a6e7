"""``make mutate`` rows for the user's journey, round 5 (issue 27): ``gpulease cost`` never cuts a value mid-word
(columns that do not fit go below the table); the budget verdict offers only what the stack can set. Area
``journey5``: ``python -m tools.mutate --area journey5``."""

from __future__ import annotations

from tools.mutation_row import Mutation

WIDTHS = ("tests/cli/test_cost_widths.py",)
WAY_OUT = ("tests/cli/test_budget_way_out.py",)

MUTATIONS = [
    Mutation("journey5", "gpulease/cli/fit_table.py",
             "    while sum(c.least() for c in kept) + overhead(len(kept), simple) > width:",
             "    while False:", WIDTHS, "columns that do not fit leave the table instead of being cut"),
    Mutation("journey5", "gpulease/cli/fit_table.py",
             "        return max((len(word) for t in texts for word in t.split()), default=1)",
             "        return 4", WIDTHS, "a prose column is never narrower than its longest word"),
    Mutation("journey5", "policies/guardrails/way_out.py",
             "        what = \"an instance type or a spot cap (maxSpotPriceUsd)\" if spot else \"an instance type\"",
             "        what = \"an instance type or a spot cap (maxSpotPriceUsd)\"", WAY_OUT,
             "an on-demand stack is never offered a spot cap"),
    Mutation("journey5", "policies/guardrails/way_out.py", "    if shorter >= floor_h:\n        own",
             "    if shorter > 0:\n        own", WAY_OUT, "hours below the cloud's shortest runtime are never offered"),
    Mutation("journey5", "policies/guardrails/way_out.py", "        if estimated is not None and per_hour < estimated:",
             "        if False:", WAY_OUT, "a spot cap below the estimated spot price is said to likely never launch"),
    Mutation("journey5", "policies/guardrails/way_out.py", "        own = _overriding(lines)",
             "        own = []", WAY_OUT, "a sweep's runs that set their own maxRuntimeHours are named"),
]
