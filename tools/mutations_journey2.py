"""``make mutate`` rows for what the CLI prints and reads: logs' tail and escaping, questions on stderr, the one
envelope and its codes, near misses, the user's catalog folder, dotted --config paths, the stack file's advisories,
the user's folder, the pinned GPU count, the budget verdict and a `pulumi new` project's stacks. Area ``journey2``:
``python -m tools.mutate --area journey2``."""

from __future__ import annotations

from tools.mutation_row import Mutation

LOGS = ("tests/cli/test_logs_output.py",)
PROMPTS = ("tests/cli/test_prompts.py",)
ENVELOPE = ("tests/cli/test_envelope_schema.py",)
NEAR = ("tests/cli/test_near_misses.py",)
CATALOG = ("tests/cli/test_user_catalog.py",)
PATHS = ("tests/cli/test_plan_config_paths.py",)
ADVICE = ("tests/cli/test_advice.py",)
FOLDER = ("tests/cli/test_user_folder.py",)
FIT = ("tests/cli/test_capacity_fit.py",)
BUDGET = ("tests/policies/test_budget.py",)
TEMPLATE = ("tests/cli/test_template_check.py",)

MUTATIONS = [
    Mutation("journey2", "gpulease/core/printable.py", "_ESCAPED = re.compile(\"[\" + _char_class(_BMP) +",
             '_ESCAPED = re.compile("[\\x00" +', LOGS, "logs never send a control character an instance wrote to the terminal"),
    Mutation("journey2", "gpulease/cli/logs.py",
             "hidden = len(group) - count if count and tag not in RECORD_TAGS and len(group) > count else 0",
             "hidden = 0", LOGS, "logs show the last lines of each log, not all of it"),
    Mutation("journey2", "gpulease/live/logs.py", '            kwargs["Range"] = f"bytes=-{MAX_LOG_BYTES}"',
             "            pass", LOGS, "a log longer than one read is read from its end"),
    Mutation("journey2", "gpulease/live/logs.py", 'lines = text.split("\\n")', "lines = text.splitlines()", LOGS,
             "a lone CR stays in its line (escaped) instead of passing for a line end"),
    Mutation("journey2", "gpulease/cli/prompt.py", "    sys.stderr.write(question)\n",
             "    sys.stdout.write(question)\n", PROMPTS, "questions go to stderr: stdout carries only the result"),
    Mutation("journey2", "gpulease/cli/prompt.py", "    if not line:\n", "    if False:\n", PROMPTS,
             "the end of input at a question is one line, exit 2, nothing written"),
    Mutation("journey2", "gpulease/cli/conventions.py", "    if not ERROR_CODE.fullmatch(code):", "    if False:", ENVELOPE,
             "error codes are kebab-case, one spelling everywhere"),
    Mutation("journey2", "gpulease/cli/envelope.py", "    return conventions.envelope(command, data, ok=not errors, errors=errors)",
             '    return {"ok": not errors, "data": data, "errors": errors}', ENVELOPE,
             "the journey commands print the one envelope, with its report key"),
    Mutation("journey2", "gpulease/cli/conventions.py", "        return did_you_mean(word, choices)\n",
             '        return ""\n', NEAR, "a mistyped subcommand gets the nearest one"),
    Mutation("journey2", "gpulease/review/stacks.py", "    close = difflib.get_close_matches(target, names, n=1, cutoff=0.6)",
             "    close = []", NEAR, "a mistyped stack name gets the nearest one"),
    Mutation("journey2", "gpulease/core/catalog/loader.py", "    return (*folder, *(Path(p)", "    return (*(Path(p)",
             CATALOG, "every command reads the user's catalog folder by itself"),
    Mutation("journey2", "gpulease/core/catalog/user_folder.py", "    if len(found) > MAX_USER_FILES:",
             "    if False:", CATALOG, "the catalog folder is bounded"),
    Mutation("journey2", "gpulease/cli/config_option.py", '        if "." in name and bad:', "        if False:", PATHS,
             "a dotted --config path is made of field names only"),
    Mutation("journey2", "gpulease/review/config_overrides.py", "        if not isinstance(node, dict):",
             "        if False:", PATHS, "a --config path through a value that is not a mapping is one line"),
    Mutation("journey2", "gpulease/review/config_overrides.py", "    out = copy.deepcopy(dict(config))",
             "    out = config", PATHS, "--config never changes the stack file's own config"),
    Mutation("journey2", "gpulease/lifecycle/advice.py",
             '        if exp.market == "spot" and ckpt.enabled and not ckpt.hook and not ckpt.signal:',
             '        if exp.market == "spot" and ckpt.enabled and not ckpt.hook and not ckpt.signal and False:',
             ADVICE, "spot without a checkpoint hook or signal is an advisory"),
    Mutation("journey2", "gpulease/lifecycle/advice.py", '        if spec.cloud == "alicloud" and exp.budget_alerts.emails:',
             "        if False:", ADVICE, "budget e-mails on Alibaba Cloud are an advisory"),
    Mutation("journey2", "gpulease/lifecycle/advice.py", "        if example_owner(exp.owner):", "        if False:",
             ADVICE, "an example owner is an advisory"),
    Mutation("journey2", "gpulease/lifecycle/deploy.py", "config_file=None if kit else str(path.resolve())",
             "config_file=None", FOLDER, "up deploys a stack of the user's folder with that file as its config"),
    Mutation("journey2", "gpulease/lifecycle/capacity.py", "    if count is not None:\n        pinned[\"count\"] = count",
             "    if False:\n        pass", FIT, "the pinned copy keeps the GPU count the user asked for"),
    Mutation("journey2", "policies/guardrails/way_out.py",
             "    shorter = math.floor(max((limit - fixed) / rate, 0.0) * 100) / 100",
             "    shorter = math.ceil(max((limit - fixed) / rate, 0.0) * 100) / 100", BUDGET,
             "the budget verdict never offers a maxRuntimeHours the budget does not cover"),
    Mutation("journey2", "gpulease/review/stacks.py", "folder != folder.parent and not {folder, folder.resolve()} & homes",
             "folder != folder.parent", TEMPLATE,
             "the walk up to a Pulumi.yaml stops below a home folder"),
    Mutation("journey2", "gpulease/lifecycle/deploy.py", "    return BACKEND() if st.work_dir is None else "
             "BACKEND(work_dir=st.work_dir)", "    return BACKEND()", TEMPLATE,
             "up and down run a pulumi-new project's stack in that project, not in the kit's"),
    Mutation("journey2", "components/spec/prompted.py", "    if not prompted(config):\n        return rest",
             "    return rest", TEMPLATE, "a pulumi-new stack's prompted values are its experiment for check and up"),
]
