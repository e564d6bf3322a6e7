"""``make mutate`` rows for ``ephemeral gc`` keeping the checkpoint buckets of the stacks it collects: each edit
removes one check, and the named tests must fail."""

from __future__ import annotations

from tools.mutation_row import Mutation

KEPT = ("tests/ephemeral/test_gc_keeps_buckets.py",)

MUTATIONS: list[Mutation] = [
    Mutation("gckept", "gpulease/ephemeral/gc.py", "            keep = () if with_buckets else status.buckets",
             "            keep = ()", KEPT, "ephemeral gc keeps the checkpoint buckets a stack's outputs name"),
    Mutation("gckept", "gpulease/ephemeral/backend.py", "            if not target:\n", "            if False:\n", KEPT,
             "a destroy keeping buckets with nothing else left runs no destroy (an empty target destroys all)"),
    Mutation("gckept", "gpulease/ephemeral/backend.py", "    if missing := [b for b in buckets if b not in found]:",
             "    if False:", KEPT, "a bucket to keep that is not in the state refuses the destroy"),
    Mutation("gckept", "gpulease/ephemeral/orchestrator.py",
             "        uris += [e.get(\"checkpointUri\") for e in experiments.values() if isinstance(e, Mapping)]",
             "        pass", KEPT, "a sweep stack's experiments' buckets are all kept"),
]
