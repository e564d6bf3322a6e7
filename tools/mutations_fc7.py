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
IDENTITY = ("tests/review/test_static_rule_identity.py",)
DATAFLOW = ("tests/review/test_static_rule_dataflow.py",)
SA = "gpulease/review/skipped_applies.py"
RULE = "gpulease/review/static_rule.py"
GUARD = "gpulease/review/offline_guard.py"

MUTATIONS: list[Mutation] = [
    Mutation(AREA, RULE, "        else:  # a class, a module, a bound method, a generator, an iterator, an Output, a subclass of a plain type\n"
             "            raise _MayRegisterError", "        else:\n            return", RUN + IDENTITY,
             "a class, an instance, a bound method, a generator or any other non-plain object may register"),
    Mutation(AREA, RULE, "    if type(module := sys.modules.get(name)) is not types.ModuleType or id(module) not in NAMESPACES:",
             "    if False:", RUN + REACH + IDENTITY + INNER,
             "an import inside the callback of a module off the allow-list may register"),
    Mutation(AREA, RULE, "        for default in (*(func.__defaults__ or ()), *(func.__kwdefaults__ or {}).values()):",
             "        for default in ():", REACH, "a callback's default arguments are read"),
    Mutation(AREA, RULE, "        for item in [*value.keys(), *value.values()] if type(value) is dict else list(value):",
             "        for item in []:", REACH,
             "a container's values are read"),
    Mutation(AREA, RULE, "    allowed: dict[int, Any] = {id(table[n]): table[n] for n in ALLOWED_BUILTINS}",
             "    allowed: dict[int, Any] = {id(v): v for v in table.values()}", RUN,
             "getattr, eval and the other reaching builtins may register"),
    Mutation(AREA, RULE, "        if type(value) in PLAIN_TYPES or id(value) in ALLOWED or id(value) in _TRUSTED:",
             "        if type(value) in PLAIN_TYPES or id(value) in ALLOWED or id(value) in _TRUSTED"
             " or getattr(value, '__module__', None) in ('json', 'builtins'):", IDENTITY,
             "an object is allowed by its identity, never by its module's name"),
    Mutation(AREA, RULE, "        if type(value) in PLAIN_TYPES or id(value)", "        if isinstance(value, PLAIN_TYPES) or id(value)",
             IDENTITY, "plain values by exact type: a str subclass may register"),
    Mutation(AREA, RULE, "        if type(value) in CONTAINER_TYPES:", "        if isinstance(value, CONTAINER_TYPES):",
             IDENTITY, "containers by exact type: a dict subclass may register"),
    Mutation(AREA, RULE, "    return table.get(name, _MayRegisterError)  # a name that resolves to nothing may register",
             "    return table.get(name, '')", IDENTITY, "a name that resolves to nothing may register"),
    Mutation(AREA, RULE, "                if name not in METHODS and not is_output_property(name):\n"
             "                    raise _MayRegisterError",
             "                if False:\n                    raise _MayRegisterError", IDENTITY,
             "a method of a computed value only from the fixed list"),
    Mutation(AREA, SA, "        if inside:\n            called = runs.judged(func, site_text(location))",
             "        if False:\n            called = runs.judged(func, site_text(location))", REACH + INNER, "an apply called during an offline run is judged on its own"),
    Mutation(AREA, SA, "            if self.registered == before and may_register(func, value):\n                self.unseen(site)\n"
             "            return result", "            return result", REACH + INNER,
             "an inner apply that registers nothing is decided by the static rule"),
    Mutation(AREA, GUARD, "event.startswith(REFUSED_PREFIXES) or", "False or", GAPS, "ctypes events are refused"),
    Mutation(AREA, GUARD, "    _refusing(_module, _name)", "    pass", GAPS,
             "mkfifo, mknod and pidfd_send_signal are refused while a callback runs offline"),
    Mutation(AREA, RULE, "        walk.value(value, 0)", "        pass", DATAFLOW,
             "the known parts an Output.all hands a callback are read like its code"),
    Mutation(AREA, RULE, 'table = getattr(func, "__builtins__", None) or glob.get("__builtins__", builtins)',
             'table = glob.get("__builtins__", builtins)', (*DATAFLOW, "tests/review/test_static_rule_name_resolution.py"),
             "a function's own captured builtins are read"),
    Mutation(AREA, RULE, "(what := helper_state.replaced(_TRUSTED)) is not None:", "(what := None) is not None:",
             DATAFLOW, "a patched Config getter makes every callback one that may register"),
    Mutation(AREA, "gpulease/review/engine_config.py", "trust(as_secret(original), original)", "as_secret(original)",
             DATAFLOW, "the review's own secure-config getters stay allowed (no false alarm on a Config global)"),
]
