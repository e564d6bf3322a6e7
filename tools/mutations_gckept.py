"""``make mutate`` rows for the checkpoint buckets kept by ``ephemeral gc``, ``ephemeral down`` and a run's teardown:
each edit removes one check, and the named tests must fail."""

from __future__ import annotations

from tools.mutation_row import Mutation

KEPT = ("tests/ephemeral/test_gc_keeps_buckets.py",)
AS_MADE = ("tests/ephemeral/test_kept_buckets_stay_as_made.py",)
DOWN = ("tests/ephemeral/test_down_keeps_buckets.py", "tests/ephemeral/test_kept_buckets_stay_as_made.py")
UNKNOWN = ("tests/ephemeral/test_gc_keeps_buckets.py", "tests/ephemeral/test_artifacts_kept.py")
COLLECT = ("tests/ephemeral/test_collect.py",)

MUTATIONS: list[Mutation] = [
    Mutation("gckept", "gpulease/ephemeral/gc.py", "            keep = () if with_buckets else status.buckets",
             "            keep = ()", KEPT, "ephemeral gc keeps the checkpoint buckets a stack's outputs name"),
    Mutation("gckept", "gpulease/ephemeral/backend.py", "            if not target:\n", "            if False:\n", KEPT,
             "a destroy keeping buckets with nothing else left runs no destroy (an empty target destroys all)"),
    Mutation("gckept", "gpulease/ephemeral/backend.py", "    if unknown:\n        raise", "    if False:\n        raise",
             UNKNOWN, "a bucket to keep that the state holds under a type not known as a bucket refuses the destroy"),
    Mutation("gckept", "gpulease/ephemeral/backend.py",
             "    unknown = [b for b in buckets if b not in found and any(",
             "    unknown = [b for b in buckets if any(", AS_MADE,
             "a bucket the state does not hold (an existing checkpoints.bucket) needs no keeping: the stack is destroyed"),
    Mutation("gckept", "gpulease/ephemeral/backend.py", "    wanted += _configuring(resources, set(wanted))\n", "", AS_MADE,
             "a kept bucket keeps the resources of its module that configure it (its privacy, encryption, policy)"),
    Mutation("gckept", "gpulease/ephemeral/orchestrator.py",
             "        uris += [e.get(\"checkpointUri\") for e in experiments.values() if isinstance(e, Mapping)]",
             "        pass", KEPT, "a sweep stack's experiments' buckets are all kept"),
    Mutation("gckept", "gpulease/ephemeral/orchestrator.py", "    if not with_buckets:\n        try:",
             "    if False:\n        try:", DOWN, "ephemeral down keeps the checkpoint buckets its outputs name"),
    Mutation("gckept", "gpulease/ephemeral/orchestrator.py", "    ok = tear.destroyed and (tear.removed or bool(tear.kept_buckets))",
             "    ok = tear.destroyed and tear.removed", ("tests/ephemeral/test_down_keeps_buckets.py",),
             "a down that keeps the buckets on purpose is not a failed teardown"),
    Mutation("gckept", "gpulease/ephemeral/teardown.py",
             "                result.destroyed, result.error = True, None  # an earlier attempt's failure is over",
             "                result.destroyed = True", AS_MADE, "a destroy that succeeds on a retry reports no error"),
    Mutation("gckept", "gpulease/cli/ephemeral_collect.py", '        "exitCode": EXIT_INCOMPLETE if failed or refused else EXIT_OK,',
             '        "exitCode": EXIT_OK,', COLLECT, "ephemeral collect exits 3 when an artifact was not collected"),
    Mutation("gckept", "gpulease/cli/ephemeral_collect.py",
             "                collected = channel.download_artifacts(outputs, stack, args.artifacts_dir,",
             "                collected = channel.download_artifacts(outputs, stack + '-', args.artifacts_dir,", COLLECT,
             "ephemeral collect reads the artifacts of the stack's own job"),
    Mutation("gckept", "gpulease/cli/ephemeral_collect.py",
             "    ephemeral.refuse_input_folder(args.artifacts_dir, reads, within=within)\n", "", COLLECT,
             "ephemeral collect refuses an --artifacts-dir among the project's inputs"),
    Mutation("gckept", "gpulease/cli/ephemeral_collect.py", "bounds=artifact_bounds.from_args(args))",
             "bounds=None)", COLLECT, "ephemeral collect holds to the --max-artifacts bounds as run does"),
    Mutation("gckept", "gpulease/ephemeral/orchestrator.py",
             "if state.failed_artifacts or state.refused_artifacts else ()", "if state.failed_artifacts else ()",
             ("tests/ephemeral/test_artifacts_kept.py",), "an artifact refused locally keeps the bucket with its only copy"),
]
