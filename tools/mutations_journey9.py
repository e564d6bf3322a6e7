"""``make mutate`` rows for the commands gpulease prints and the command line's usage mistakes: a dash-named stack
named after ``--``, a stack file in a symlinked ``stacks/`` found by its path, a stack file outside every project
never sent to the Pulumi CLI as a stack name, empty stack names refused by every command's parser, shell words and
no-break spaces kept whole when wrapped, an option before its command recognised as its parser reads it, an empty
``--public-key``; up's plan line of a dash-named stack, no option completed after ``--``, a symlinked stack file
found by its path, a missing stack file path refused, ephemeral ``--base-stack``/``--stack-name`` checked as stack
arguments, linear wrapping of a word of unclosed quotes. Area ``journey9``: ``python -m tools.mutate --area journey9``."""

from __future__ import annotations

from tools.mutation_row import Mutation

BASH = ("tests/cli/test_printed_stack_commands_in_bash.py",)
USAGE = ("tests/cli/test_empty_stack_and_attached_options.py",)
WRAP = ("tests/cli/test_wrap_keeps_shell_words.py",)
TARGET = "gpulease/live/target.py"
PLACE = "gpulease/cli/option_place.py"

MUTATIONS = [
    Mutation("journey9", "gpulease/review/stack_commands.py", '    if word.startswith("-"):\n        return [*rest, "--"',
             '    if False:\n        return [*rest, "--"', BASH, "a dash-named stack is printed after --"),
    Mutation("journey9", "gpulease/review/stacks.py",
             "users = {f.parent.resolve() for f in user_stack_files(project_dir)}",
             "users = {f.parent for f in user_stack_files(project_dir)}", BASH,
             "a stack file in a symlinked stacks/ is found by its path"),
    Mutation("journey9", TARGET, "        if _a_path(stack):\n            raise", "        if False:\n            raise",
             BASH, "a stack file outside every project is never sent to the Pulumi CLI as a stack name"),
    Mutation("journey9", TARGET, '    return "/" in stack or not os.path.isdir(stack) or', "    return True or", BASH,
             "a bare name that is a plain folder here is still a stack of the Pulumi CLI"),
    Mutation("journey9", "gpulease/cli/stack_arg.py", "        if not value.strip():", "        if not value:", USAGE,
             "a blank stack name is refused"),
    Mutation("journey9", "gpulease/cli/status.py", 'p.add_argument("stack", type=stack_type(), help=',
             'p.add_argument("stack", help=', USAGE, "status '' is refused before the Pulumi CLI is asked"),
    Mutation("journey9", "gpulease/cli/ssh.py", '    p.add_argument("stack", type=stack_type())',
             '    p.add_argument("stack")', USAGE, "ssh '' is refused: never the selected stack's instance"),
    Mutation("journey9", "gpulease/cli/wrap.py", "char not in unclosed and (shell or at == start",
             "char not in unclosed and (at == start", WRAP, "a shell word of quoted parts stays whole"),
    Mutation("journey9", "gpulease/cli/wrap.py", "    return char == BLANK",
             "    return char.isspace()", WRAP, "a no-break space is no break"),
    Mutation("journey9", "gpulease/cli/wrap.py", '    lines = text.split("\\n")', "    lines = text.splitlines()", WRAP,
             "a line separator inside a line is kept"),
    Mutation("journey9", PLACE, '    if len(word) > 2 and word[1] != "-" and word[:2] in options:',
             "    if False:", USAGE, "-n5 before its command is said to go after it"),
    Mutation("journey9", PLACE, "        return (typed, starting[0]) if len(typed) > 2 and len(starting) == 1 else None",
             "        return None", USAGE, "a shortened option before its command names the whole option"),
    Mutation("journey9", PLACE, '    if argv[0] == "--":', "    if False:", USAGE,
             "-- before the command is one clear line"),
    Mutation("journey9", "gpulease/cli/init.py",
             "    if args.public_key is not None and not args.public_key.strip():", "    if False:", USAGE,
             "init --public-key '' is refused, never the default key"),
]

UP_LINE = ("tests/cli/test_up_plan_line_of_dash_named_stack.py",)
COMPLETION = ("tests/cli/test_completion_after_end_of_options.py",)
PATHS = ("tests/cli/test_stack_file_paths_symlinked_and_missing.py",)
EPHEMERAL = ("tests/cli/test_ephemeral_base_and_stack_name_checked.py",)

MUTATIONS += [
    Mutation("journey9", "gpulease/lifecycle/deploy.py", '    target = " ".join(stack_last(stack_word(stack, st.path)))',
             "    target = stack", UP_LINE, "up's plan line names a dash-named stack after --"),
    Mutation("journey9", "gpulease/cli/completion.py", 'if [[ "$w" == -- ]]; then ended=1; break; fi',
             'if false; then ended=1; break; fi', COMPLETION, "no option completes after --"),
    Mutation("journey9", "gpulease/cli/completion.py", '    [[ -n "$ended" ]] && words=""', "    true", COMPLETION,
             "after --, the command's options are not offered"),
    Mutation("journey9", "gpulease/review/stacks.py",
             '        if given.name.startswith("Pulumi.") and given.parent.resolve() in users:', "        if False:",
             PATHS, "a symlinked stack file in stacks/ is found by its path"),
    Mutation("journey9", TARGET, "        if _a_file_name(stack):  #", "        if False:  #", PATHS,
             "a missing stack file path is refused without asking the Pulumi CLI"),
    Mutation("journey9", "gpulease/cli/ephemeral.py", '"--base-stack", required=True, type=stack_type(),',
             '"--base-stack", required=True,', EPHEMERAL, "ephemeral --base-stack '' is refused by the parser"),
    Mutation("journey9", "gpulease/cli/ephemeral.py", '"--stack-name", type=stack_type(CI_ACCEPTED),',
             '"--stack-name",', EPHEMERAL, "ephemeral --stack-name '' is refused, never the default name"),
    Mutation("journey9", "gpulease/ephemeral/config.py", "    if len(found) != 1:  # a project folder",
             "    if False:  # a project folder", EPHEMERAL, "a --base-stack folder of several stacks is one line"),
    Mutation("journey9", "gpulease/cli/wrap.py", "                unclosed.add(char)", "                pass",
             ("tests/cli/test_wrap_time_on_long_words.py",), "wrapping a word of unclosed quotes takes linear time"),
]
