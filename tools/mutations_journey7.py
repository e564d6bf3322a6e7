"""``make mutate`` rows for the commands that follow a deploy: the project ``status``/``logs``/``ssh`` read a stack's
outputs in, the stack a file names, the one shell word a printed command names a stack by, and the template
program's stack file under ``stackConfigDir``."""

from __future__ import annotations

from tools.mutation_row import Mutation

TARGETS = ("tests/cli/test_printed_commands_reach_the_deployed_stack.py",)
CONFIG_DIR = ("tests/cli/test_template_stack_config_dir.py",)
COMMANDS = "gpulease/review/stack_commands.py"
TARGET = "gpulease/live/target.py"
STACKS = "gpulease/review/stacks.py"

MUTATIONS = [
    Mutation("journey7", TARGET, "OUTPUTS_READER(stack, project_of(found.path))",
             "OUTPUTS_READER(stack, stacks.PROJECT_ROOT)", TARGETS,
             "status reads the outputs in the project up deployed the stack in"),
    Mutation("journey7", STACKS, "    if own is not None and resolved in {f.resolve() for f in own_stack_files(project_dir)}:",
             "    if False:", TARGETS, "a stack of a pulumi-new project running the kit's program is that project's"),
    Mutation("journey7", STACKS, "    if resolved.parent != (project_dir / \"stacks\").resolve() and resolved not in {",
             "    if False and resolved not in {", ("tests/cli/test_printed_commands_reach_the_deployed_stack.py",
                                                     "tests/cli/test_up.py"),
             "a stack file of another project is refused by up and status alike"),
    Mutation("journey7", TARGET, "    name = stacks.stack_name(path)\n", "    name = stack\n", TARGETS,
             "status given a stack file asks the Pulumi CLI for the stack the file names"),
    Mutation("journey7", COMMANDS, "    if path is None or _finds(name, path):", "    if True:", TARGETS,
             "a printed command names the stack by its path when the bare name finds another file"),
    Mutation("journey7", COMMANDS, "    return shlex.quote(printable(shown_path(path)))",
             "    return printable(shown_path(path))", TARGETS,
             "a printed command names the stack file in one shell word"),
    Mutation("journey7", "gpulease/cli/down.py", 'again = command("down", result.stack, result.path, "--all")',
             'again = command("down", result.stack, None, "--all")', TARGETS,
             "down's suggested --all names the stack file it destroyed"),
    Mutation("journey7", "gpulease/lifecycle/deploy.py", "(`{command('plan', stack, st.path)}` shows why)",
             "(`{command('plan', stack, None)}` shows why)", TARGETS,
             "a refused up's suggested plan names the stack file it reviewed"),
    Mutation("journey7", "templates/gpulease-experiment/__main__.py", "config_dir = project_info(project)[1]",
             "config_dir = project", CONFIG_DIR, "the template program names its stack file in stackConfigDir"),
]
