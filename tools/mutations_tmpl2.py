"""``make mutate`` rows for `pulumi new` template projects: the one project-file finder, ``main:``, the refusal of a
kit stack's bare name inside another Pulumi project, the home stop through a symlink, ``stackConfigDir``, ``init``
in the kit's template folder, and prompted values refused under the keys the user wrote."""

from __future__ import annotations

from tools.mutation_row import Mutation

WALK = ("tests/cli/test_template_project_walk.py",)
STACKS = "gpulease/review/stacks.py"
PROMPTED = "components/spec/prompted.py"

MUTATIONS = [
    Mutation("tmpl2", STACKS, "    for name in PROJECT_FILES:", "    for name in PROJECT_FILES[:1]:", WALK,
             "a Pulumi.yml project is found by the walk, the stack lookup and the loader alike"),
    Mutation("tmpl2", STACKS, '        main = project_meta(project).get("main")', "        main = None", WALK,
             "a project's program is found through Pulumi.yaml's main:"),
    Mutation("tmpl2", STACKS, "            if f not in users and here is None and", "            if False and", WALK,
             "inside another Pulumi project a bare name never falls back to the kit's stack"),
    Mutation("tmpl2", STACKS, "homes = {Path(os.path.abspath(Path.home())), Path.home().resolve()}",
             "homes = {Path(os.path.abspath(Path.home()))}", WALK, "a symlinked home folder stops the walk"),
    Mutation("tmpl2", STACKS, '    if config_dir is None or config_dir == "":', '    if config_dir == "":', WALK,
             "an empty stackConfigDir is the project folder"),
    Mutation("tmpl2", STACKS, "    elif not isinstance(config_dir, str):", "    elif False:", WALK,
             "a stackConfigDir that is not text is refused, showing it"),
    Mutation("tmpl2", "gpulease/lifecycle/stackfile.py",
             '        if candidate.resolve().parent == (kit / "templates").resolve():', "        if False:", WALK,
             "init never writes a stack into the kit's template folder"),
    Mutation("tmpl2", PROMPTED, "    if not isinstance(raw, PromptedExperiment):", "    if True:", WALK,
             "a bad prompted value is refused under its gpulease-new: key"),
    Mutation("tmpl2", PROMPTED, "    number = read_number(text.strip())", "    number = float(text)", WALK,
             "a prompted number is read in ASCII digits only"),
    Mutation("tmpl2", PROMPTED, '    name = get("name") or ""', '    name = get("name") or "experiment"', WALK,
             "an empty prompted name is refused, not defaulted"),
]
