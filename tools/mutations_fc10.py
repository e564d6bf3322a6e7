"""``make mutate`` rows for the SDK's own apply callbacks (lookups, ``json_loads``), provider SDK output values
among the known parts, plain data and ``from`` imports in the static rule, tables a module fills on first use and
``gettext.install`` in the helper state, an ``async def`` callback run offline, and a gathered secret."""

from __future__ import annotations

from tools.mutation_row import Mutation

AREA = "fc10"
LOOKUPS = ("tests/review/test_skipped_applies_sdk_lookups.py",)
VALUES = ("tests/review/test_static_rule_sdk_output_values.py",)
PLAIN = ("tests/review/test_static_rule_plain_values.py",)
TABLES = ("tests/review/test_helper_state_lazy_tables.py",)
STATE = ("tests/review/test_static_rule_helper_state.py",)
RULE = "gpulease/review/static_rule.py"
OUTPUTS = "gpulease/review/sdk_outputs.py"
HELPERS = "gpulease/review/helper_state.py"
SKIPPED = "gpulease/review/skipped_applies.py"

MUTATIONS: list[Mutation] = [
    Mutation(AREA, SKIPPED, "            sdk_made(func, caller)\n", "            pass\n", LOOKUPS,
             "a lookup's own callback and json_loads's are the SDK's, not the program's"),
    Mutation(AREA, RULE, "                                                    or _SDK_MADE.get(id(value)) is value):",
             "                                                    or False):", LOOKUPS,
             "a callback noted as the SDK's own is read by what it closes over only"),
    Mutation(AREA, RULE, "    if (type(func) is types.FunctionType and func.__code__.co_filename == caller.f_code.co_filename\n"
             "            and func.__globals__ is caller.f_globals and is_sdk_file(caller.f_code.co_filename)):",
             "    if (type(func) is types.FunctionType and is_sdk_file(func.__code__.co_filename)):", LOOKUPS,
             "an SDK function a program frame applies is no callback the SDK made"),
    Mutation(AREA, RULE, "            for cell in value.__closure__ or ():\n                self.value(cell.cell_contents, depth + 1)",
             "            for cell in ():\n                self.value(cell.cell_contents, depth + 1)", LOOKUPS,
             "what an SDK callback closes over (json_loads's object_hook) is read"),
    Mutation(AREA, OUTPUTS, 'sep and (top == "pulumi" or (top.startswith(PREFIXES)', 'sep and ((top.startswith(PREFIXES)',
             LOOKUPS, "the pulumi SDK's own files are SDK code"),
    Mutation(AREA, SKIPPED, "            if inspect.iscoroutine(result):", "            if False:", LOOKUPS,
             "an async callback's coroutine run offline is closed"),
    Mutation(AREA, RULE, "        elif is_output_value(value):", "        elif False:", VALUES,
             "a provider SDK output value among the known parts stays judged"),
    Mutation(AREA, RULE, "            self.items(dict(dict.items(value)) if isinstance(value, dict) else dict(vars(value)), depth)",
             "            pass", VALUES, "what a provider SDK output value holds is read"),
    Mutation(AREA, OUTPUTS, "bool(mro) and all(_sdk_class(c) for c in mro)", "bool(mro)", VALUES,
             "a program's subclass of an SDK output type is the program's code"),
    Mutation(AREA, OUTPUTS, '        if last != "outputs" and not last.startswith("get_"):', '        if last != "outputs":',
             VALUES, "a lookup result's property names are read from its get_ module"),
    Mutation(AREA, RULE, "        if len(value) > MAX_ITEMS:",
             "        if len([*value.keys(), *value.values()] if type(value) is dict else value) > MAX_ITEMS:", PLAIN,
             "a dict's entries are counted against the bound, as the docs say"),
    Mutation(AREA, RULE, "        if len(value) > MAX_ITEMS:", "        if False:", PLAIN,
             "a container past the bound may register"),
    Mutation(AREA, RULE, "                self.value(_attribute(pushed, name), depth + 1)",
             "                raise _MayRegisterError", PLAIN, "from json import dumps stays judged"),
    Mutation(AREA, RULE, "                self.value(_attribute(pushed, name), depth + 1)", "                pass", PLAIN,
             "a from-import of a name that is no harmless value may register"),
    Mutation(AREA, RULE, 'fromlist.opname != "LOAD_CONST" or level.argval != 0:', 'fromlist.opname != "LOAD_CONST":',
             PLAIN, "a relative import is the program's module"),
    Mutation(AREA, HELPERS, "                    and not (value is None and _plain(current, 3)):",
             "                    and True:", TABLES, "a table filled on first use is no replacement"),
    Mutation(AREA, HELPERS, "    if type(value) in (str, bytes, int, float, bool, type(None)):\n        return True\n    if depth == 0:",
             "    if True:\n        return True\n    if depth == 0:", TABLES, "a table set to what is not plain data is a replacement"),
    Mutation(AREA, HELPERS, '                        and not (space is builtins and key == "_" and _gettext_install(current)):',
             "                        and True:", TABLES, "builtins._ added by gettext.install is no replacement"),
    Mutation(AREA, HELPERS, "    return type(value) is types.MethodType and type(value.__self__) in kinds \\\n"
             "        and value.__func__ in (kinds[0].gettext, kinds[1].gettext)", "    return True", TABLES,
             "a builtins._ of the program's is a replacement"),
    Mutation(AREA, HELPERS, "        if kind is types.ModuleType and sys.modules.get(label) is not space:",
             "        if False:", TABLES, "a module swapped in sys.modules is found"),
    Mutation(AREA, HELPERS, "        if len(now) != len(values):", "        if False:", TABLES,
             "a name added to a helper's namespace is found"),
    Mutation(AREA, RULE, "        if _VERDICTS[0] != before and (what := helper_state.replaced(_TRUSTED)) is not None:",
             "        if (what := helper_state.replaced(_TRUSTED)) is not None:", STATE,
             "a replacement matters only when a callback was judged unable to register"),
    Mutation(AREA, "gpulease/review/gathered.py", "        token = GATHERING.set(True)", "        token = GATHERING.set(False)",
             ("tests/review/test_secrets_gathered.py",), "a plain part gathered with a secret stays unredacted"),
    Mutation(AREA, "gpulease/review/sdk_outputs.py", "                                                                         and _generated(filename)))",
             "                                                                         and True))",
             ("tests/review/test_sdk_trust_needs_generated_code.py",),
             "a pulumi_-named package is a provider SDK only when its code is Pulumi's generated code"),
]
