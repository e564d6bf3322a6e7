"""``make mutate`` rows for init's output file and the command line's usage mistakes: the stack an ``--output``
file is, the header naming the file as commands find it, an output the system cannot create, the suggested move of
a dash-named file, quoted paths kept whole when wrapped, region completion of priced commands, an option before its
command, empty values. Area ``journey8``: ``python -m tools.mutate --area journey8``."""

from __future__ import annotations

from tools.mutation_row import Mutation

NAMES = ("tests/cli/test_init_output_names_its_stack.py",)
INIT = "gpulease/cli/init.py"
USAGE = ("tests/cli/test_option_place_and_empty_values.py",)

MUTATIONS = [
    Mutation("journey8", INIT, "    if from_output is not None and name != from_output:", "    if False:", NAMES,
             "an --output named Pulumi.<x>.yaml for another stack than --name is refused"),
    Mutation("journey8", INIT, "    if (target := stack_target(path, found.name)) not in (None, found.name):",
             "    if False:", NAMES, "the header names the file by its path where the bare name finds another"),
    Mutation("journey8", INIT, "    except OSError as exc:  # a name or path", "    except LookupError as exc:  #",
             ("tests/cli/test_init_unwritable_output.py",), "an output the system cannot create is one line, exit 2"),
    Mutation("journey8", "gpulease/cli/init_next.py", "looks for a stack: mv -- ", "looks for a stack: mv ",
             ("tests/cli/test_init_next_move_of_dash_name.py",), "the suggested mv of a dash-named file runs"),
    Mutation("journey8", "gpulease/cli/wrap.py", "        end = _span_end(line, at) if opens", "        end = None if opens",
             ("tests/cli/test_next_line_keeps_quoted_paths.py",), "a quoted path is never split across lines"),
    Mutation("journey8", "gpulease/cli/completion.py", 'PRICED_REGION_COMMANDS = ("init", "size")',
             'PRICED_REGION_COMMANDS = ("init",)', ("tests/cli/test_completion_priced_regions.py",),
             "size --region completes only to the regions size accepts"),
    Mutation("journey8", "gpulease/cli/main.py", "        if line is not None:\n            return _usage_mistake",
             "        if False:\n            return _usage_mistake", USAGE,
             "an option before its command says it goes after the command"),
    Mutation("journey8", "gpulease/cli/check.py", 'p.add_argument("stack", nargs="?", type=stack_type(CHECK_ACCEPTED),',
             'p.add_argument("stack", nargs="?",', USAGE, "check '' is refused, never a check of no stack"),
    Mutation("journey8", INIT, "    if args.key_name is not None and not args.key_name.strip():", "    if False:",
             USAGE, "init --key-name '' is refused"),
]
