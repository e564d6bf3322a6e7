"""``make mutate`` rows for the project-file journeys: the program file a ``main:`` names, Pulumi.yml stack files,
a folder named Pulumi.yaml, misspelt prompted keys, huge prices."""

from __future__ import annotations

from tools.mutation_row import Mutation

JOURNEYS = ("tests/cli/test_project_file_journeys.py",)
STACKS = "gpulease/review/stacks.py"

MUTATIONS = [
    Mutation("journey6", "gpulease/review/render.py", "runpy.run_path(str(program_path), ",
             'runpy.run_path(str(directory / "__main__.py"), ', JOURNEYS,
             "plan runs the file main: names, not the folder's __main__.py"),
    Mutation("journey6", STACKS, "    if not found:\n        missing", "    if False:\n        missing", JOURNEYS,
             "a main: naming something missing is refused, naming main: and the path"),
    Mutation("journey6", STACKS, '    return found.suffix if found is not None else ".yaml"', '    return ".yaml"',
             JOURNEYS, "a Pulumi.yml project's stacks are Pulumi.<stack>.yml"),
    Mutation("journey6", STACKS, " and not _is_dir(folder / name):", ":", JOURNEYS,
             "a folder named Pulumi.yaml is not a project file"),
    Mutation("journey6", "components/spec/load.py", 'if unknown_prompts := getattr(raw_exp, "unknown_prompts", None):',
             "if False:", JOURNEYS, "a gpulease-new key the template does not prompt for is refused"),
    Mutation("journey6", "components/spec/prompted.py", 'if path == f"{CONFIG_KEY}.ssh" and "publicKey" in msg:',
             "if False:", JOURNEYS, "a prompted SSH address without a key names gpulease-new:publicKey"),
]
