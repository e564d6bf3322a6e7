"""``make mutate`` rows for the user's journey (issue 27): shell completion never hands a stack file's name to the
shell as code (read one a line, only plain names offered); the budget verdict's offered instance price pays the
disks, addresses and buckets first, so setting it makes the worst case fit. Area ``journey4``:
``python -m tools.mutate --area journey4``."""

from __future__ import annotations

from tools.mutation_row import Mutation

QUOTING = ("tests/cli/test_completion_quoting.py",)
WAY_OUT = ("tests/cli/test_cost_words.py", "tests/policies/test_budget.py")

MUTATIONS = [
    Mutation("journey4", "gpulease/cli/completion.py",
             'sys.stdout.write("".join(f"{name}\\n" for name in names if PLAIN_NAME.match(name)))',
             'sys.stdout.write("".join(f"{name}\\n" for name in names))', QUOTING,
             "completion stacks offers only plain stack names"),
    Mutation("journey4", "gpulease/cli/completion.py",
             '            [[ "$name" == "$cur"* ]] && COMPREPLY+=("$name")',
             '            words="$words $name"', QUOTING,
             "the completion script takes each stack name as one word, never through compgen -W"),
    Mutation("journey4", "policies/guardrails/way_out.py",
             "    others = _clean(max(worst - sum(ln.worst_case_usd or 0.0 for ln in compute), 0.0))",
             "    others = fixed", WAY_OUT,
             "the offered instance price leaves room for the disks, addresses and buckets"),
    Mutation("journey4", "policies/guardrails/way_out.py",
             "    hours = sum(ln.runtime_hours or 0.0 for ln in compute) or runtime",
             "    hours = runtime", WAY_OUT, "several instances are offered a price each, over all their hours"),
]
