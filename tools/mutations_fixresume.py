"""``make mutate`` rows for ``gpulease resume`` and ``gpulease status``: only the stack's own experiments are
started, the stack's recorded deadline holds, an Alibaba Cloud stop that is not a reclaim stays, an ended AWS spot
request is said, cloud errors are one line, and text from the instance's reports is escaped and bounded."""

from __future__ import annotations

from tools.mutation_row import Mutation

RESUME = "tests/cli/test_resume.py"
STATUS = "tests/live/test_status.py"

MUTATIONS = [
    Mutation("fixresume", "gpulease/lifecycle/resume.py", "found = [f for f in listed if f.experiment in names]",
             "found = list(listed)", (f"{RESUME}::test_a_foreign_instance_with_the_stacks_tags_is_not_started_nor_counted",),
             "resume considers only instances of the stack's own experiments"),
    Mutation("fixresume", "gpulease/lifecycle/resume.py", "    if held:\n", "    if False:\n",
             (f"{RESUME}::test_alicloud_instance_stopped_without_a_reclaim_is_refused",),
             "an Alibaba Cloud instance stopped without a reclaim is not started"),
    Mutation("fixresume", "gpulease/lifecycle/resume_clouds.py",
             "reclaimed = any(isinstance(lock, dict) and str(lock.get(\"LockReason\", \"\")).lower() == RECLAIM_LOCK",
             "reclaimed = True or any(isinstance(lock, dict) and str(lock.get(\"LockReason\", \"\")).lower() == RECLAIM_LOCK",
             (f"{RESUME}::test_alicloud_instance_stopped_without_a_reclaim_is_refused",),
             "the reclaim is read from OperationLocks"),
    Mutation("fixresume", "gpulease/lifecycle/resume_clouds.py", "            if state in REQUEST_ENDED_STATES:",
             "            if False:", (f"{RESUME}::test_aws_interrupted_instance_whose_request_ended_is_told_so",),
             "an ended spot request is said, not left to EC2"),
    Mutation("fixresume", "gpulease/lifecycle/resume_clouds.py", "            elif isinstance(until, datetime) and until <= now:",
             "            elif False:", (f"{RESUME}::test_aws_interrupted_instance_whose_request_ended_is_told_so",),
             "a spot request past its ValidUntil is said to have ended"),
    Mutation("fixresume", "gpulease/lifecycle/resume_clouds.py",
             "        with cloud_call(f\"DescribeInstances for stack {stack!r}\", _aws_errors()):\n            found = self._find(stack)",
             "        if True:\n            found = self._find(stack)",
             (f"{RESUME}::test_aws_listing_errors_are_one_line_exit_1",), "an AWS listing error is one line, exit 1"),
    Mutation("fixresume", "gpulease/lifecycle/resume_clouds.py",
             "            with cloud_call(f\"DescribeInstances for stack {stack!r}\", _ali_errors()):",
             "            if True:", (f"{RESUME}::test_alicloud_listing_errors_are_one_line_exit_1",),
             "an Alibaba Cloud listing error is one line, exit 1"),
    Mutation("fixresume", "gpulease/lifecycle/resume_clouds.py", "        if isinstance(exc, passed):\n            raise",
             "        if False:\n            raise", (f"{RESUME}::test_aws_missing_credentials_stay_the_users_line",),
             "a missing credential stays the user's line (exit 2)"),
    Mutation("fixresume", "gpulease/live/view.py", "        table.add_row(label, Text(shown(value)))",
             "        table.add_row(label, Text(value))",
             (f"{STATUS}::test_control_and_format_characters_from_the_reports_are_shown_escaped",),
             "status escapes control and format characters from the reports"),
    Mutation("fixresume", "gpulease/live/status.py", "    for item in chosen[-INTERRUPTIONS_KEPT:]:",
             "    for item in chosen:", (f"{STATUS}::test_a_long_interruptions_list_is_cut_to_the_latest_fifty_and_says_so",),
             "status carries at most the latest fifty interruptions"),
]
