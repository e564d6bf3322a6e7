"""``make mutate`` rows for the strict settings reader's depth and number bounds, the pull's watchdog inside one
read, the truncated S3 listing without a token, ``--dest`` that is not a folder and object names that would not
read as written."""

from __future__ import annotations

from tools.mutation_row import Mutation

AGENT = ("tests/instance/test_job_agent_parts.py",)
TRICKLE = ("tests/transfer/test_pull_trickle.py",)
CONFINED = ("tests/transfer/test_pull_confined.py",)

MUTATIONS = [
    Mutation("fixlost", "instance/cloud_access.py", "    if depth > SETTINGS_MAX_DEPTH:", "    if False:", AGENT,
             "a settings file nested past SETTINGS_MAX_DEPTH is refused with the depth"),
    Mutation("fixlost", "instance/cloud_access.py", "        if len(literal) > SETTINGS_MAX_NUMBER_CHARS:",
             "        if False:", AGENT, "a number literal past SETTINGS_MAX_NUMBER_CHARS is refused"),
    Mutation("fixlost", "gpulease/transfer/bounded.py", "        for response in reading:\n            _shut(response)",
             "        for response in reading:\n            pass", TRICKLE,
             "at the pull's deadline the answers being read are shut down"),
    Mutation("fixlost", "gpulease/transfer/s3.py", "            limits.watch(response.raw)", "            pass",
             TRICKLE, "every answer the S3 client reads is watched by the pull's deadline"),
    Mutation("fixlost", "gpulease/transfer/s3.py", "        if not token:  # fail closed", "        if False:",
             TRICKLE, "a truncated S3 listing without a continuation token is refused"),
    Mutation("fixlost", "gpulease/transfer/run.py", "    if os.path.lexists(dest) and not dest.is_dir():",
             "    if False:", CONFINED, "--dest that exists and is not a folder is one line"),
    Mutation("fixlost", "gpulease/transfer/files.py", "    hidden = hidden_character(key)\n    if hidden:\n        return hidden",
             "    hidden = None\n    if hidden:\n        return hidden", CONFINED, "an object name that would not read as written is refused"),
]
