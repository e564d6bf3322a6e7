"""``make mutate`` rows for callbacks judged on every value they are handed (``run_with_unknowns``, the known values
nested in ``Output.from_input``'s and ``Output.all``'s inputs, one callback applied twice) and for what a program
reads about the preview itself (``is_dry_run()``, ``Output.future()`` of an unknown output)."""

from __future__ import annotations

from tools.mutation_row import Mutation

AREA = "fc8"
EVERY = ("tests/review/test_skipped_applies_every_value.py",)
READS = ("tests/review/test_preview_reads.py",)
SA = "gpulease/review/skipped_applies.py"
PR = "gpulease/review/preview_reads.py"

MUTATIONS: list[Mutation] = [
    Mutation(AREA, SA, "        elif run_with_unknowns and dry_run and is_program_file(caller.f_code.co_filename):",
             "        elif False:", EVERY,
             "a program's run_with_unknowns apply on an unknown value is judged like a skipped one"),
    Mutation(AREA, SA, "                return func(value) if self._data.result().is_known else judged(value)",
             "                return judged(value)", EVERY,
             "a run_with_unknowns apply on a known value runs as at update, not judged"),
    Mutation(AREA, "gpulease/review/static_rule.py",
             "    allowed[id(pulumi.output.UNKNOWN)] = pulumi.output.UNKNOWN", "    pass", EVERY,
             "the SDK's Output.UNKNOWN handed to a callback is harmless, like the marker"),
    Mutation(AREA, SA, "        if isinstance(value, dict | list | tuple):  # lifted through",
             "        if False:  # lifted through", EVERY,
             "Output.from_input of a dict, list or tuple hands the callback its known values"),
    Mutation(AREA, SA, "            return {key: self.resolved(item) for key, item in raw.items()}",
             "            return rpc.UNKNOWN", EVERY, "a dict among the inputs is read item by item"),
    Mutation(AREA, SA, "            items = [self.resolved(item) for item in raw]",
             "            items = [rpc.UNKNOWN for item in raw]", EVERY,
             "a list or tuple among the inputs is read item by item"),
    Mutation(AREA, SA, "        if (id(func) in self.ran and self.ran[id(func)] is func) or len(self.ran) >= MAX_RUNS:",
             "        if id(func) in self.ran and self.ran[id(func)] is func:\n            return\n"
             "        if len(self.ran) >= MAX_RUNS:", EVERY,
             "a callback run before is judged again on the new value"),
    Mutation(AREA, PR, "        if (frame := program_caller()) is not None:\n            unseen(dry_run_line(",
             "        if False:\n            unseen(dry_run_line(", READS,
             "a program asking is_dry_run() is partial"),
    Mutation(AREA, PR, "    settings.is_dry_run = pulumi.runtime.is_dry_run = is_dry_run",
             "    pulumi.runtime.is_dry_run = is_dry_run", READS,
             "is_dry_run is seen however imported (pulumi.runtime.settings too)"),
    Mutation(AREA, PR, "        return frame if mine else None", "        return frame", READS + EVERY,
             "only a program frame's read counts, never the SDK's or the review's"),
    Mutation(AREA, PR, "            rendering.unseen = True", "            pass", READS,
             "a preview read with nothing registered is partial, not an error"),
    Mutation(AREA, PR, "            if not known:\n                unseen(future_line(site, read))",
             "            if False:\n                unseen(future_line(site, read))", READS + EVERY,
             "a program awaiting an unknown output's future() is partial"),
    Mutation(AREA, PR, "            if not known:\n                unseen(future_line(site, read))",
             "            if True:\n                unseen(future_line(site, read))", READS,
             "a program awaiting a known output's future() is not"),
]
