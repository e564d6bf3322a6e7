"""``make mutate`` rows for the offline review's fail-closed rules: components without a model, the exit 2/3 rule,
lookup arguments the provider refuses, resources used as values."""

from __future__ import annotations

from tools.mutation_row import Mutation

_CORPUS = ("tests/review/test_corpus.py",)  # the programs named in each row are the ones that fail

MUTATIONS: list[Mutation] = [
    Mutation("review", "gpulease/review/render.py", "        if gap is not None:\n            self.gaps.append(gap)",
             "        if False:\n            self.gaps.append(gap)",
             _CORPUS, "a remote component without a model makes the review partial (unmodelled-component)"),
    Mutation("review", "gpulease/review/render.py", "return self.error is not None and (bool(self.resources) or self.unseen)",
             "return self.error is not None and (any(r.custom for r in self.resources) or self.unseen)",
             _CORPUS, "anything registered before a failure makes it partial, exit 3 (component-then-crash)"),
    Mutation("review", "gpulease/review/lookup_args.py",
             "raise LookupArgumentError(token, key, value, kind.__name__, site) from None", "continue",
             ("tests/review/test_mock_registry.py", *_CORPUS),
             "a lookup argument the provider refuses stops the program, named (ami-bad-boolean)"),
    Mutation("review", "gpulease/review/render.py",
             "        finite = downgrade(request.object)\n", "        finite = non_finite_paths(request.object) == []\n",
             _CORPUS, "a resource used as an input is passed on as its id (resources-as-values)"),
]

_UNSENT = ("tests/review/test_unsent_values.py",)
MUTATIONS += [
    Mutation("review-unsent", "gpulease/review/invoke_sites.py", "            if sending is None:\n                raise",
             "            if True:\n                raise", _UNSENT,
             "a lookup argument or component output beyond a double's range is one line with the program's site"),
    Mutation("review-unsent", "gpulease/review/render.py", "if (line := export_problem(key, value))]", "if False]", _UNSENT,
             "a stack output beyond a double's range makes the review partial (huge-int-export)"),
    Mutation("review-unsent", "gpulease/review/manifest_text.py",
             "    if group is not None and isinstance(text, str) and len(text) <= 1:", "    if False:", _UNSENT,
             "a v1 ConfigGroup's single string is scanned for GPU compute as a whole"),
    Mutation("review-unsent", "gpulease/review/mocks.py", "site or REGISTRATION_SITE.get()", "site", _UNSENT,
             "an unanswered kubernetes:yaml:decode names the component's line"),
]
