"""``make mutate`` rows for names that do not read as themselves and artifacts confined like a pull: each edit
removes one check, and the named tests must fail."""

from __future__ import annotations

from tools.mutation_row import Mutation

ARTIFACTS = ("tests/ephemeral/test_artifacts_confined.py",)
PUSH = ("tests/transfer/test_push_names_refused.py",)

MUTATIONS: list[Mutation] = [
    Mutation("lost6", "gpulease/transfer/files.py",
             "            problem = name_problem(dest, name, prefix, chosen) or shapes.conflict(name)",
             "            problem = None", ARTIFACTS,
             "an artifact whose name pull would refuse (absolute, a//b, U+202E) is refused, not written"),
    Mutation("lost6", "gpulease/transfer/files.py",
             "                if problem is None and (here := confined_target(dest, name, prefix))[1] is not None:",
             "                if False:", ARTIFACTS, "an artifact never overwrites a file already in --artifacts-dir"),
    Mutation("lost6", "gpulease/ephemeral/channel.py",
             "        written, refused = write_confined(dest, names, prefix,",
             "        written, refused = (lambda *a: ([], []))(dest, names, prefix,", ARTIFACTS,
             "artifacts are written through pull's confined writer"),
    Mutation("lost6", "gpulease/core/datasources.py", "    if any(hidden(c) for c in decoded) or \"\\\\\" in decoded:",
             "    if \"\\\\\" in decoded:", ("tests/core/test_source_names_hidden.py",),
             "an https path decoding to an invisible character is refused at plan, as on the instance"),
    Mutation("lost6", "gpulease/transfer/run.py", "    if unreadable:\n        raise UserError(unreadable)",
             "    if False:\n        raise UserError(unreadable)", PUSH,
             "push refuses a non-UTF-8 or hidden file name before anything is sent"),
    Mutation("lost6", "gpulease/ephemeral/progress.py", "        text = escaped(text, keep=\"\\t\")",
             "        text = text", ("tests/ephemeral/test_instance_lines_escaped.py",),
             "the instance's log lines are printed escaped"),
    Mutation("lost6", "gpulease/cli/output_file.py", "    refuse_hidden(path, option, accepted)", "    pass",
             ("tests/cli/test_output_path_hidden.py",), "--output with a hidden character is refused"),
    Mutation("lost6", "gpulease/cli/cost.py",
             "[red]{escape(printable(rendering.stack))}: {escape(printable(first))}[/red]",
             "[red]{rendering.stack}: {first}[/red]", ("tests/cli/test_cost_escapes_names.py",),
             "cost prints a stack's name and error escaped"),
]
