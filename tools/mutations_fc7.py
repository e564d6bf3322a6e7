"""``make mutate`` rows for skipped applies judged closed: the static rule may-register unless all a callback
reaches is on the allow-list, applies called during an offline run judged on their own, and the guard's events
and wrappers for calls that raise none."""

from __future__ import annotations

from tools.mutation_row import Mutation

AREA = "fc7"
REACH = ("tests/review/test_skipped_applies_reach.py",)
RUN = ("tests/review/test_skipped_applies_run.py",)
GAPS = ("tests/review/test_offline_guard_gaps.py",)
INNER = ("tests/review/test_skipped_applies_inner.py",)
SA = "gpulease/review/skipped_applies.py"
RULE = "gpulease/review/static_rule.py"
GUARD = "gpulease/review/offline_guard.py"

MUTATIONS: list[Mutation] = [
    Mutation(AREA, RULE, "        if issubclass(cls, pulumi.Resource):\n            raise _MayRegisterError",
             "        if issubclass(cls, pulumi.Resource):\n            return", RUN,
             "a resource class or instance the callback reaches may register"),
    Mutation(AREA, RULE, "        if _top(module.__name__) not in ALLOWED_MODULES:\n            raise _MayRegisterError",
             "        if False:\n            raise _MayRegisterError", RUN + REACH,
             "a module off the allow-list (importlib, os) may register"),
    Mutation(AREA, RULE, "        for default in (*(func.__defaults__ or ()), *(func.__kwdefaults__ or {}).values()):",
             "        for default in ():", REACH, "a callback's default arguments are read"),
    Mutation(AREA, RULE, "            for item in items:\n                self.value(item, depth, names)",
             "            for item in items[:0]:\n                self.value(item, depth, names)", REACH,
             "a container's values are read"),
    Mutation(AREA, RULE, "            if isinstance(member, types.FunctionType | staticmethod | classmethod | property):",
             "            if False:", REACH, "a program class's methods are read"),
    Mutation(AREA, RULE, "            if func.__name__ in DENIED_BUILTINS or _top(", "            if _top(", RUN,
             "getattr, eval and the other reaching builtins may register"),
    Mutation(AREA, RULE, "        if any(n.startswith(\"__\") and n.endswith(\"__\") and n not in DUNDERS_ALLOWED for n in names):",
             "        if False:", RUN, "a dunder attribute may reach what the rule does not read"),
    Mutation(AREA, RULE, "            if _top(imported) not in ALLOWED_MODULES:", "            if False:", RUN + INNER,
             "an import inside the callback of a module off the allow-list may register"),
    Mutation(AREA, SA, "        called = runs.judged(func, site_text(location)) if inside else func",
             "        called = func", REACH + INNER, "an apply called during an offline run is judged on its own"),
    Mutation(AREA, SA, "            if self.registered == before and may_register(func):\n                self.unseen(site)\n"
             "            return result", "            return result", REACH + INNER,
             "an inner apply that registers nothing is decided by the static rule"),
    Mutation(AREA, GUARD, "event.startswith(REFUSED_PREFIXES) or", "False or", GAPS, "ctypes events are refused"),
    Mutation(AREA, GUARD, "    _refusing(_module, _name)", "    pass", GAPS,
             "mkfifo, mknod and pidfd_send_signal are refused while a callback runs offline"),
]
