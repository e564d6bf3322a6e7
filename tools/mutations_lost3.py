"""``make mutate`` rows for the bounds table's scan, the numeric flags' parser, the invisible characters, the
to: folder's byte length, the log redaction's bounds, the idle rule's bound from the boot and the OSS pull's
deadline: each edit removes one check, and the named tests must fail."""

from __future__ import annotations

from tools.mutation_row import Mutation

MUTATIONS: list[Mutation] = [
    Mutation("instance", "tests/instance/test_bounds_literals.py",
             'BOUND_NAME = re.compile(r"(_SECONDS|_TIMEOUT\\w*|_ATTEMPTS)$")', 'BOUND_NAME = re.compile(r"^$")',
             ("tests/instance/test_bounds_literals.py",),
             "the scan sees module constants named *_SECONDS, *_TIMEOUT*, *_ATTEMPTS written as numbers"),
    Mutation("cli", "gpulease/core/flag_numbers.py", 'DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)',
             'DECIMAL = re.compile(r"[+-]?(?:\\d+(?:\\.\\d*)?|\\.\\d+)', ("tests/cli/test_numeric_flags.py",),
             "a numeric flag reads ASCII digits only"),
    Mutation("spec", "gpulease/core/printable.py", "_UNSAFE_STARTS, ord(char)) or invisible(char)",
             "_UNSAFE_STARTS, ord(char)) or False",
             ("tests/core/test_invisible_characters.py",), "invisible characters are unsafe and refused in names"),
    Mutation("staging", "instance/staging_files.py", "    if size > TO_MAX_BYTES or longest > NAME_MAX:",
             "    if False:", ("tests/instance/test_staging_long_names.py",),
             "the instance refuses a to: folder over 512 UTF-8 bytes"),
    Mutation("spec", "components/spec/workflow.py", "        size, longest = len(to.encode()),",
             "        size, longest = len(to),", ("tests/instance/test_staging_long_names.py",),
             "plan counts a to: folder in UTF-8 bytes"),
    Mutation("instance", "instance/manifest.py", "    if forms > MAX_FORMS:", "    if False:",
             ("tests/instance/test_log_upload.py",), "a block of thousands of credential-like forms is replaced whole"),
    Mutation("instance", "instance/idle_rule.py", "        if started is None and ended is None and self.boot is not None",
             "        if False", ("tests/instance/test_idle_after_setup.py",),
             "with no bootstrap start recorded, idle counts from boot + the bootstrap's own bound"),
    Mutation("transfer", "gpulease/transfer/oss.py", "            limits.watch(response._internal_response.raw)\n",
             "", ("tests/transfer/test_pull_trickle_oss.py",), "an OSS answer is shut down at the pull's deadline"),
]
