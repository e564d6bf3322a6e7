"""``make mutate`` rows for spot recovery on Alibaba Cloud and ``gpulease resume``: what a reclaim does to the
instance, and what resume refuses before it starts anything."""

from __future__ import annotations

from tools.mutation_row import Mutation

RESUME = ("tests/cli/test_resume.py",)
RECOVERY = ("tests/components/alicloud/test_spot_recovery.py",)

MUTATIONS = [
    Mutation("spot-recovery", "components/alicloud/spot_recovery.py", 'return spec.market == "spot" and spec.spot.recover is True',
             'return spec.market == "spot"', RECOVERY, "only spot.recover keeps a reclaimed instance (stopped)"),
    Mutation("spot-recovery", "components/alicloud/spot_recovery.py", "    return STOP if recovers(spec) else TERMINATE",
             "    return TERMINATE", RECOVERY, "spot.recover stops the reclaimed instance in economical mode"),
    Mutation("spot-recovery", "components/alicloud/instance.py", '"replace_on_changes": ["image_id", "spot_interruption_behavior", ',
             '"replace_on_changes": ["image_id", ', RECOVERY, "turning spot.recover on or off replaces the instance"),
    Mutation("spot-recovery", "gpulease/lifecycle/resume.py", "    if moment <= now + MIN_LEAD:", "    if False:", RESUME,
             "resume starts nothing past the deadline"),
    Mutation("spot-recovery", "gpulease/lifecycle/resume.py", "    except (TypeError, ValueError):\n        raise ResumeRefusedError",
             "    except (TypeError, ValueError):\n        return now + MIN_LEAD * 100\n        raise ResumeRefusedError",
             RESUME, "a deadline resume cannot read is refused (fail closed)"),
    Mutation("spot-recovery", "gpulease/lifecycle/resume.py", "    if not_spot:\n", "    if False:\n", RESUME,
             "resume refuses a stack that is not spot"),
    Mutation("spot-recovery", "gpulease/lifecycle/resume.py",
             '    moments = [_refuse_deadline(stack, d, "the stack\'s outputs", now) for d in _output_deadlines(outputs)]',
             "    moments = []", RESUME, "nothing is started or recreated past the stack's recorded deadline"),
    Mutation("spot-recovery", "gpulease/lifecycle/resume_clouds.py", "        for _ in range(MAX_PAGES):\n            page",
             "        for _ in range(10**6):\n            page", RESUME, "resume's listing is bounded"),
    Mutation("spot-recovery", "gpulease/lifecycle/resume_clouds.py",
             '            {"Name": f"tag:{v.TAG_STACK}", "Values": [stack]},\n', "", RESUME,
             "resume starts only its own stack's instances"),
    Mutation("spot-recovery", "gpulease/lifecycle/resume_clouds.py",
             '        tag = [ecs.DescribeInstancesRequestTag(key=v.TAG_STACK, value=stack),\n               ',
             "        tag = [", RESUME, "resume starts only its own stack's instances (Alibaba Cloud)"),
    Mutation("spot-recovery", "gpulease/lifecycle/resume_clouds.py",
             'cloud_restarts=item.get("InstanceLifecycle") == "spot" and reason == SPOT_INTERRUPTION_STOP,',
             "cloud_restarts=False,", RESUME, "an AWS instance stopped by a spot interruption is left to EC2"),
]
