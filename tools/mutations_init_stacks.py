"""``make mutate`` rows for ``gpulease init`` and finding stacks: never into another project's folder nor over
another program's file, the answers checked as the flags are (ASCII numbers, a refused answer asked again a bounded
number of times, the on-demand reason, a key type the cloud imports, the checkpoint signal on spot), and a mistyped
stack name refused with the nearest one by the live commands too."""

from __future__ import annotations

from tools.mutation_row import Mutation

FOLDERS = ("tests/cli/test_init_folders.py",)
ANSWERS = ("tests/cli/test_init_answers.py",)
DISCOVERY = ("tests/cli/test_stack_discovery.py",)

MUTATIONS = [
    Mutation("jA", "gpulease/lifecycle/stackfile.py",
             "        own = [name for name in PYTHON_PROJECT_FILES if os.path.lexists(candidate / name)]",
             "        own: list[str] = []", FOLDERS, "init never writes into a Python project of the user's own"),
    Mutation("jA", "gpulease/lifecycle/stackfile.py", "            if not _gpulease_program(candidate):",
             "            if False:", FOLDERS, "init never writes into a Python Pulumi project that is not gpulease"),
    Mutation("jA", "gpulease/lifecycle/stackfile.py",
             "    if os.path.lexists(path) and (why := kit_stack_file(path)) is not None:", "    if False:",
             FOLDERS, "--force replaces only a gpulease stack file"),
    Mutation("jA", "gpulease/lifecycle/stackfile.py",
             '    if others or (keys and not any(k.startswith("gpulease:") for k in keys)):', "    if others:",
             FOLDERS, "--force keeps a stack file with no gpulease: key"),
    Mutation("jA", "gpulease/lifecycle/stackfile.py", "    if a.checkpoint_process:", "    if False:", ANSWERS,
             "a spot stack is written with the checkpoint signal"),
    Mutation("jA", "gpulease/lifecycle/answers.py", '"alicloud": "~/.ssh/id_rsa.pub"',
             '"alicloud": "~/.ssh/id_ed25519.pub"', ANSWERS, "the default key on Alibaba Cloud is RSA"),
    Mutation("jA", "gpulease/lifecycle/answers.py",
             "    if declared in all_key_types() and (problem := SPEC_RULES[cloud].key_problem(declared)) is not None:",
             "    if False:", ANSWERS, "init refuses a key type the cloud's ImportKeyPair refuses, naming --public-key"),
    Mutation("jA", "gpulease/lifecycle/answers.py", "    if not params.isascii() or not params.isprintable():",
             "    if False:", ANSWERS, "--params in Unicode digits is refused"),
    Mutation("jA", "gpulease/lifecycle/answers.py", "        return parse(text)", "        return float(text)",
             ANSWERS, "a number typed on a terminal is read in ASCII digits only"),
    Mutation("jA", "gpulease/lifecycle/answers.py", "    if len(text.strip()) < MIN_REASON_CHARS:", "    if False:",
             ANSWERS, "an on-demand reason too short to review is refused by init"),
    Mutation("jA", "gpulease/cli/init.py", '    if market == "on-demand":', "    if False:", ANSWERS,
             "on-demand asks for its reason"),
    Mutation("jA", "gpulease/cli/init.py", "            if attempt == TRIES:", "            if attempt == TRIES + 1:",
             ANSWERS, "a refused answer is asked again at most 3 times in all"),
    Mutation("jA", "gpulease/live/target.py", "        if stacks.nearest_name(stack) is not None:", "        if False:",
             DISCOVERY, "status, logs and ssh refuse a mistyped stack name with the nearest one"),
]
