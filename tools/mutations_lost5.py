"""``make mutate`` rows for the pull that fails an object whose name is a file where another needs a folder (the
rest arrives), and ``ephemeral run --artifacts-dir`` refused among the run's inputs: each edit removes one check,
and the named tests must fail."""

from __future__ import annotations

from tools.mutation_row import Mutation

SHAPES = ("tests/transfer/test_pull_file_or_folder.py",)
ARTIFACTS = ("tests/ephemeral/test_artifacts_dir.py",)

MUTATIONS: list[Mutation] = [
    Mutation("lost5", "gpulease/transfer/files.py", "        if above is not None:", "        if False:", SHAPES,
             "a key below another key's file fails on its own instead of stopping the pull"),
    Mutation("lost5", "gpulease/transfer/files.py", "        if here in self.folders:", "        if False:", SHAPES,
             "a key at another key's folder fails on its own"),
    Mutation("lost5", "gpulease/transfer/run.py", "                    if clash := shapes.conflict(key):",
             "                    if clash := None:", SHAPES, "pull checks each key against the others it pulls"),
    Mutation("lost5", "gpulease/transfer/run.py", "            return f\"would be a stack file in {Path(read).parent}, beside the ones this project deploys\"",
             "            return None", ("tests/transfer/test_pull_changed_objects.py",),
             "a pull into the project never adds a stack file beside the ones it deploys"),
    Mutation("lost5", "gpulease/cli/output_file.py",
             "        if found is None and os.path.lexists(read) and _inside(_resolved(read), target):",
             "        if False:", ARTIFACTS, "--artifacts-dir holding Pulumi.yaml or the stack file is refused"),
    Mutation("lost5", "gpulease/cli/output_file.py", "        if _inside(target, _resolved(inner)):", "        if False:",
             ARTIFACTS, "--artifacts-dir inside the stack files' folder is refused"),
    Mutation("lost5", "gpulease/cli/ephemeral.py",
             "        refuse_input_folder(args.artifacts_dir, reads, within=within)", "        pass", ARTIFACTS,
             "ephemeral run checks --artifacts-dir before anything is created"),
]
