"""``make mutate`` rows for ``gpulease resume`` and ``gpulease status``: only the stack's own experiments are
started, the stack's recorded deadline holds, an Alibaba Cloud stop that is not a reclaim stays, an ended AWS spot
request is said, cloud errors are one line, and text from the instance's reports is escaped and bounded."""

from __future__ import annotations

from tools.mutation_row import Mutation

RESUME = "tests/cli/test_resume.py"
STATUS = "tests/live/test_status.py"

MUTATIONS = [
    Mutation("fixresume", "gpulease/lifecycle/resume.py", "found = [f for f in listed if f.experiment in names]",
             "found = list(listed)", (RESUME,),
             "resume considers only instances of the stack's own experiments"),
    Mutation("fixresume", "gpulease/lifecycle/resume.py", "    if held:\n", "    if False:\n",
             (RESUME,),
             "an Alibaba Cloud instance stopped without a reclaim is not started"),
    Mutation("fixresume", "gpulease/lifecycle/resume_clouds.py",
             "reclaimed = any(isinstance(lock, dict) and str(lock.get(\"LockReason\", \"\")).lower() == RECLAIM_LOCK",
             "reclaimed = True or any(isinstance(lock, dict) and str(lock.get(\"LockReason\", \"\")).lower() == RECLAIM_LOCK",
             (RESUME,),
             "the reclaim is read from OperationLocks"),
    Mutation("fixresume", "gpulease/lifecycle/resume_clouds.py", "            if state in REQUEST_ENDED_STATES:",
             "            if False:", (RESUME,),
             "an ended spot request is said, not left to EC2"),
    Mutation("fixresume", "gpulease/lifecycle/resume_clouds.py", "            elif isinstance(until, datetime) and until <= now:",
             "            elif False:", (RESUME,),
             "a spot request past its ValidUntil is said to have ended"),
    Mutation("fixresume", "gpulease/lifecycle/resume_clouds.py",
             "        with cloud_call(f\"DescribeInstances for stack {stack!r}\", _aws_errors()):\n            found = self._find(stack)",
             "        if True:\n            found = self._find(stack)",
             (RESUME,), "an AWS listing error is one line, exit 1"),
    Mutation("fixresume", "gpulease/lifecycle/resume_clouds.py",
             "            with cloud_call(f\"DescribeInstances for stack {stack!r}\", _ali_errors()):",
             "            if True:", (RESUME,),
             "an Alibaba Cloud listing error is one line, exit 1"),
    Mutation("fixresume", "gpulease/lifecycle/resume_clouds.py", "        if isinstance(exc, passed):\n            raise",
             "        if False:\n            raise", (RESUME,),
             "a missing credential stays the user's line (exit 2)"),
    Mutation("fixresume", "gpulease/live/view.py", "        table.add_row(label, Text(shown(value)))",
             "        table.add_row(label, Text(value))",
             (STATUS,),
             "status escapes control and format characters from the reports"),
    Mutation("fixresume", "gpulease/live/status.py", "    for item in chosen[-INTERRUPTIONS_KEPT:]:",
             "    for item in chosen:", (STATUS,),
             "status carries at most the latest fifty interruptions"),
]
