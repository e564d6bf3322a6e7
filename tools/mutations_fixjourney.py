"""``make mutate`` rows for the journey commands' guards: the logs command's overall bound, its failed-read and
cut-body checks, its rewritten-log and whole-line rules, the newest job chunks; the --config path depth; the
catalog folder a variable names; init never writing into another program's project; no abbreviated flags."""

from __future__ import annotations

from tools.mutation_row import Mutation

BOUNDS = ("tests/live/test_logs_bounds.py",)
PATHS = ("tests/cli/test_plan_config_paths.py",)

MUTATIONS = [
    Mutation("journey", "gpulease/live/logs.py", "    if worker.is_alive():", "    if False:", BOUNDS,
             "the logs command's reads end at one overall bound"),
    Mutation("journey", "gpulease/live/logs.py", "            if code is None and not isinstance(exc, _transport_errors()):\n"
             "                raise\n            detail", "            if code is None:\n                raise\n            detail",
             BOUNDS, "a failed transfer is read-failed, exit 1"),
    Mutation("journey", "gpulease/live/logs.py", "        if isinstance(promised, int) and len(body) < min(promised, MAX_LOG_BYTES):",
             "        if False:", BOUNDS, "a body cut short is a failed read"),
    Mutation("journey", "gpulease/live/logs.py", "        if body.startswith(anchor):  # the log grew", "        if True:  # the log grew",
             BOUNDS, "a rewritten log is detected by the bytes before the last read's end"),
    Mutation("journey", "gpulease/live/logs.py", "        if self.whole_lines and len(body) < MAX_LOG_BYTES:", "        if False:",
             BOUNDS, "follow never prints a line in pieces"),
    Mutation("journey", "gpulease/live/logs.py", "            if len(chosen) >= MAX_JOB_CHUNKS or size > budget:",
             "            if False:", BOUNDS, "job chunks read are bounded, the newest first"),
    Mutation("journey", "gpulease/cli/config_option.py", "        if name.count(\".\") >= MAX_PATH_PARTS:", "        if False:", PATHS,
             "a dotted --config path is at most 32 parts"),
    Mutation("journey", "gpulease/core/catalog/user_folder.py", "        if problem:\n            raise CatalogFolderError",
             "        if False:\n            raise CatalogFolderError", ("tests/cli/test_user_catalog.py",),
             "GPULEASE_CATALOG_DIR names a readable folder"),
    Mutation("journey", "gpulease/lifecycle/stackfile.py", "    if (foreign := foreign_project(path)) is not None:",
             "    if False:", ("tests/cli/test_init.py",), "init never writes into another program's project"),
    Mutation("journey", "gpulease/cli/conventions.py", '        kwargs["allow_abbrev"] = False', "        pass",
             ("tests/cli/test_usage_errors.py",), "no flag is taken from its first letters"),
]
