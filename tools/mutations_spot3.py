"""``make mutate`` rows for what ends a spot instance's request whatever deletes the instance (area "spot-delete"):
the instance's before_delete hook (bound, registered when parked, refusing a failed cancel, letting an ended or gone
request through), the destroy with the program, ``gpulease up``'s cancel before parking and its check, the pack's
reading of an empty request id, and the stop time of a new instance on the same disk."""

from __future__ import annotations

from tools.mutation_row import Mutation

AREA = "spot-delete"
HOOK = ("tests/components/aws/test_spot_hook.py",)
BACKEND = ("tests/ephemeral/test_backend.py",)
UP = ("tests/cli/test_up.py",)
PACK = ("tests/policies/test_programs.py",)
SAME_DISK = ("tests/instance/test_same_disk_resume.py",)
STATUS = ("tests/live/test_status.py",)

MUTATIONS = [
    Mutation(AREA, "components/aws/spot_hook.py",
             "        if code in GONE_CODES:\n", "        if code:\n",
             HOOK, "a cancel that failed for another reason than a gone request refuses the delete"),
    Mutation(AREA, "components/aws/spot_hook.py",
             "    if not states or not states <= ENDED_STATES:\n", "    if False:\n",
             HOOK, "an answer that does not end the request refuses the delete"),
    Mutation(AREA, "components/aws/spot_hook.py",
             "        if code in GONE_CODES:\n            return",
             "        if False:\n            return",
             HOOK, "a request EC2 no longer knows lets the delete go on"),
    Mutation(AREA, "gpulease/ephemeral/backend.py",
             "            run_program=True, target=target,\n", "            target=target,\n",
             BACKEND, "the destroy runs the program, so its delete hooks run"),
    Mutation(AREA, "gpulease/lifecycle/deploy.py",
             "    parking = spot_requests.parked_spot_experiments(st.spec.cloud, st.spec.experiments)",
             "    parking = []", UP, "parking cancels the stack's spot requests first and checks after"),
    Mutation(AREA, "gpulease/lifecycle/spot_requests.py",
             "    if still:\n        raise SpotRequestError", "    if False:\n        raise SpotRequestError",
             UP, "a request still open after parking fails the update with the command to run"),
    Mutation(AREA, "policies/guardrails/deadlines.py",
             '    if ids == [""]:\n', "    if False:\n",
             PACK, "an empty request id in a cancel is said to be unconfirmable, not a wrong id"),
    Mutation(AREA, "instance/instance_state.py",
             "last_seen is not None and epoch(last_seen) is not None and last_seen <= now else None",
             "last_seen is not None else None",
             SAME_DISK, "a last write after now (or not a time) is no stop time"),
    Mutation(AREA, "instance/run_job.py",
             "        if stat.S_ISREG(info.st_mode):\n", "        if True:\n",
             SAME_DISK, "only regular files of the disk say when the previous instance last wrote there"),
    Mutation(AREA, "gpulease/live/view.py",
             '        if item.get("kind") == "new-instance" and item.get("stoppedAt") is None:',
             "        if False:", STATUS, "a new instance without a known stop says so rather than '? for ?'"),
]

MUTATIONS += [
    Mutation(AREA, "gpulease/review/mock_hooks.py",
             "    sdk_hooks.register_resource_hook = recorder.register  # type: ignore[assignment]\n", "",
             ("tests/review/test_mock_hooks.py",), "a render registers hooks by name without the SDK's callback server"),
]
