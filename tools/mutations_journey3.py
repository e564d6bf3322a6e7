"""``make mutate`` rows for the journey's last gaps: a catalog override without ``asOf`` leaves its prices undated
(never the shipped date) and every price-age check counts them as stale; ``logs`` keeps the newest job-log objects
within a bounded listing; ``status --watch --json`` prints the envelope; the suite's clean-tree check sees what a
test writes into a folder that was already there. Area ``journey3``:
``python -m tools.mutate --area journey3``."""

from __future__ import annotations

from tools.mutation_row import Mutation

DATES = ("tests/core/test_catalog_dates.py", "tests/cli/test_undated_prices.py")
UNDATED = ("tests/cli/test_undated_prices.py",)
LISTING = ("tests/cli/test_logs_listing.py",)
WATCH = ("tests/cli/test_status_watch.py",)
TREE = ("tests/test_clean_tree.py",)

MUTATIONS = [
    Mutation("journey3", "gpulease/core/catalog/dating.py",
             'when = override["asOf"] if override.get("asOf") is not None else UNDATED',
             'when = override["asOf"] if override.get("asOf") is not None else _dates(previous, field).get(key, '
             'previous.get("asOf"))',
             DATES, "a price an override gives without a date is undated, not dated as the shipped row"),
    Mutation("journey3", "gpulease/core/catalog/freshness.py", "if age is None or age > max_age_days:",
             "if age is not None and age > max_age_days:", UNDATED,
             "an undated price counts as stale whatever the maximum age"),
    Mutation("journey3", "gpulease/cli/plan.py", "        undated = load_catalog().undated",
             "        undated = []", UNDATED, "plan names each undated override row, with its file and line"),
    Mutation("journey3", "gpulease/live/logs.py", "                    kept.append(item)",
             "                    kept.append(item) if len(kept) < MAX_LISTED else None", LISTING,
             "logs keep the last job-log objects in key order (the newest chunks), not the first"),
    Mutation("journey3", "gpulease/live/logs.py", "                    if scanned > MAX_SCANNED:",
             "                    if False:", LISTING, "the job-log listing stops after MAX_SCANNED objects and says so"),
    Mutation("journey3", "gpulease/cli/status.py", "                sys.stdout.write(watch_line(doc))",
             '                sys.stdout.write(json.dumps(doc, default=str) + "\\n")', WATCH,
             "status --watch --json prints one envelope per refresh"),
    Mutation("journey3", "tests/support/clean_tree.py",
             'return frozenset(f"{line} [{stamp(root, line)}]" for line in done.stdout.splitlines() if not tool_cache(line))',
             "return frozenset(line for line in done.stdout.splitlines() if not tool_cache(line))", TREE,
             "the clean-tree check sees a file written into a folder already there, and a changed file rewritten"),
]
