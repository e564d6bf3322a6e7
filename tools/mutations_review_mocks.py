"""``make mutate`` rows for the offline review's fail-closed rules: components without a model, the exit 2/3 rule,
lookup arguments the provider refuses, resources used as values."""

from __future__ import annotations

from tools.mutation_row import Mutation

_CORPUS = "tests/review/test_corpus.py::test_program_is_reviewed_as_expected"

MUTATIONS = [
    Mutation("review", "gpulease/review/render.py", "        if gap is not None:\n            self.gaps.append(gap)",
             "        if False:\n            self.gaps.append(gap)",
             (f"{_CORPUS}[unmodelled-component]",
              "tests/review/test_corpus.py::test_gpulease_plan_of_an_unmodelled_component_exits_partial"),
             "a remote component without a model makes the review partial"),
    Mutation("review", "gpulease/review/render.py", "return self.error is not None and bool(self.resources)",
             "return self.error is not None and any(r.custom for r in self.resources)",
             (f"{_CORPUS}[component-then-crash]",), "anything registered before a failure makes it partial (3)"),
    Mutation("review", "gpulease/review/lookup_args.py",
             "raise LookupArgumentError(token, key, value, kind.__name__, site) from None", "continue",
             (f"{_CORPUS}[ami-bad-boolean]",), "a lookup argument the provider refuses stops the program, named"),
    Mutation("review", "gpulease/review/render.py",
             "        downgrade(request.object)  # a resource as an input", "        pass  # a resource as an input",
             (f"{_CORPUS}[resources-as-values]", f"{_CORPUS}[eks-managed-node-group]"),
             "a resource used as an input is passed on as its id"),
]
