"""``make mutate`` rows for what the static rule's allowed helpers run with, names resolved as the interpreter
resolves them, and the property names of provider SDK output types."""

from __future__ import annotations

from tools.mutation_row import Mutation

AREA = "fc9"
STATE = ("tests/review/test_static_rule_helper_state.py",)
NAMES = ("tests/review/test_static_rule_name_resolution.py",)
OUTPUTS = ("tests/review/test_static_rule_sdk_outputs.py",)
RULE = "gpulease/review/static_rule.py"
HELPERS = "gpulease/review/helper_state.py"

MUTATIONS: list[Mutation] = [
    Mutation(AREA, RULE, "        if _VERDICTS[0] != before and (what := helper_state.replaced(_TRUSTED)) is not None:",
             "        if False:", STATE,
             "a replaced value an allowed helper runs with makes every callback judged harmless one that may register"),
    Mutation(AREA, HELPERS, "            if current is not value and (current := _unwrap(current)) is not value",
             "            if False and current is not value", STATE, "a replaced namespace value is found"),
    Mutation(AREA, HELPERS, "        if type(space) is not kind:\n            return", "        if False:\n            return",
             STATE, "a module whose class was swapped is found"),
    Mutation(AREA, HELPERS, "is not value and id(current) not in trusted \\\n", "is not value \\\n", STATE + OUTPUTS,
             "the review's own stand-ins are no replacement"),
    Mutation(AREA, HELPERS, "                if key not in values and key not in CACHES and not (type(current) is types.ModuleType",
             "                if key not in values and key not in CACHES and not (False", STATE,
             "a submodule imported later is no replacement"),
    Mutation(AREA, "gpulease/review/skipped_applies.py", "    trust(apply, instead_of=original)\n", "", OUTPUTS,
             "the review's own Output.apply is no replacement"),
    Mutation(AREA, RULE, "        if type(glob) is not dict or table is not BUILTINS:", "        if type(glob) is not dict:",
             NAMES, "a function whose builtins are not the real builtins namespace may register"),
    Mutation(AREA, RULE, "        if type(glob) is not dict or table is not BUILTINS:", "        if table is not BUILTINS:",
             NAMES, "a function whose globals are not an exact dict may register"),
    Mutation(AREA, RULE, "    if isinstance(space, types.ModuleType) and type(space) is not types.ModuleType:\n"
             "        raise _MayRegisterError", "    if False:\n        raise _MayRegisterError", NAMES,
             "a module that is not exactly a module may register"),
    Mutation(AREA, RULE, "                if name not in METHODS and not is_output_property(name):",
             "                if name not in METHODS:", OUTPUTS,
             "a property of a provider SDK's output type read on a computed value stays judged"),
]
