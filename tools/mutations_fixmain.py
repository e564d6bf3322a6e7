"""``make mutate`` rows for the bounds and refusals that keep staging, pull, push, the report file and the
watchdog's deadline honest: each edit removes one check, and the named tests must fail."""

from __future__ import annotations

from tools.mutation_row import Mutation

HTTP = ("tests/instance/test_staging_http_deadline.py",)
HOSTILE = ("tests/instance/test_staging_hostile.py",)
REFUSALS = ("tests/components/spec/test_plan_time_refusals.py",)
OUTPUT = ("tests/cli/test_conventions.py",)
OSS = ("tests/transfer/test_push_pull_oss.py",)
SETTINGS = ("tests/instance/test_settings.py",)
DEADLINE = ("tests/instance/test_deadline_rule_finite.py",)
KEYS = ("tests/transfer/test_pull_key_forms.py",)
STATE = ("tests/instance/test_instance_state.py",)
PATTERNS = ("tests/review/test_anchored_patterns.py",)

MUTATIONS: list[Mutation] = [
    Mutation("fixmain", "instance/staging_http.py", "            data = resp.read1(min(BUFFER, limit - got))",
             "            data = resp.read(limit - got)", HTTP, "one receive per read, so the deadline is checked"),
    Mutation("fixmain", "instance/staging.py", '''                reserved_name(what.rsplit("/", 1)[-1], folder)''',
             "                pass", HOSTILE, "a bucket object named as staging's own records is refused"),
    Mutation("fixmain", "instance/staging.py", "        reserved_name(name, folder)\n        job = FileJob(",
             "        job = FileJob(", HOSTILE, "an https file named as staging's own records is refused"),
    Mutation("fixmain", "components/spec/workflow.py", "        if name is not None and ds.staging_reserved(name):",
             "        if False:", REFUSALS, "a one-file source named as staging's own records is refused at plan"),
    Mutation("fixmain", "gpulease/cli/output_file.py", "    return REPORT_HEADER.match(head) is not None",
             "    return REPORT_HEADER.search(head) is not None", OUTPUT,
             "a file is our report only when it starts with the report's header"),
    Mutation("fixmain", "gpulease/transfer/oss.py", "        if not page.next_continuation_token:",
             "        if False:", OSS, "an OSS listing truncated without a token is refused"),
    Mutation("fixmain", "instance/cloud_access.py", "        if not math.isfinite(value):",
             "        if False:", SETTINGS, "1e999 in a settings file is refused"),
    Mutation("fixmain", "instance/cloud_access.py", "            parse_constant=_no_constant)", ")", SETTINGS,
             "NaN and Infinity in a settings file are refused"),
    Mutation("fixmain", "instance/deadline_rule.py", "        if first is None or hours is None or hours < 0:",
             "        if first is None:", DEADLINE, "a non-finite max_runtime_hours never becomes the deadline"),
    Mutation("fixmain", "instance/deadline_rule.py", "        if st.epoch(value) is None:", "        if False:",
             DEADLINE, "a tag read as a non-finite number keeps the deadline held"),
    Mutation("fixmain", "gpulease/transfer/files.py",
             '    if any(part in ("", ".") for part in parts):\n        return "not in canonical form',
             '    if False:\n        return "not in canonical form', KEYS, "keys not in canonical form are refused"),
    Mutation("fixmain", "gpulease/transfer/files.py", "    if longest > NAME_MAX:\n", "    if False:\n", KEYS,
             "a name longer than 255 bytes is refused before touching the disk"),
    Mutation("fixmain", "gpulease/transfer/files.py", "    if whole > PATH_MAX:", "    if False:", KEYS,
             "a path longer than 4096 bytes is refused"),
    Mutation("fixmain", "gpulease/transfer/files.py", "        if first != key:",
             "        if False:", KEYS, "two keys landing on one local file: the second is refused"),
    Mutation("fixmain", "gpulease/transfer/files.py", "    if not stat.S_ISDIR(top.st_mode):", "    if False:", KEYS,
             "a top-level push path that is not a regular file or folder is refused"),
    Mutation("fixmain", "gpulease/transfer/files.py", "        elif skipped is not None:", "        elif False:", KEYS,
             "entries left out of a pushed folder are named"),
    Mutation("fixmain", "gpulease/transfer/files.py", "    if len(prefix.encode()) >= room:", "    if False:", KEYS,
             "a --to longer than an object key may be is refused"),
    Mutation("fixmain", "instance/staging_fetch.py", "                                     retry_after(resp))",
             "                                     None)", HOSTILE, "a file download honours Retry-After"),
    Mutation("fixmain", "instance/instance_state.py", "    if claim_.instance_id is not None or not (isinstance(owner, str)",
             "    if True or not (isinstance(owner, str)", STATE,
             "with the id unreadable, a state record on the disk is not used"),
    Mutation("fixmain", "instance/watchdog.py", "            if self.claim.instance_id is None and mono >= self.next_claim:",
             "            if False:", STATE, "the state is claimed once the id is readable"),
    Mutation("fixmain", "gpulease/review/organization.py", r'ORG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}\Z")',
             r'ORG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")', PATTERNS,
             "an organization name with a trailing newline is refused"),
]
