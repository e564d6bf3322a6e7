"""``make mutate`` rows for spot recovery on AWS (area "spot-aws"): the persistent request and its end, who may
cancel it, what the spec refuses, the pack's rule and the rehearsal's note."""

from __future__ import annotations

from tools.mutation_row import Mutation

AWS_TESTS = ("tests/components/aws/test_spot_recovery.py",)
SPEC_TESTS = ("tests/components/spec/test_spot.py",)
PACK_TESTS = ("tests/policies/test_programs.py",)
REHEARSAL_TESTS = ("tests/integration/test_rehearsal.py",)
PRECONDITION_TESTS = ("tests/review/test_replacement_preconditions.py",)

MUTATIONS = [
    Mutation("spot-aws", "components/aws/lifetime.py",
             "schedule_expression=deadline.apply(lambda d: at_expression(d, CANCEL_LEAD)),",
             "schedule_expression=deadline.apply(at_expression),",
             AWS_TESTS, "the request is cancelled before the termination, never with it"),
    Mutation("spot-aws", "components/aws/lifetime.py",
             '"input": request.apply(lambda rid: json.dumps({"SpotInstanceRequestIds": [rid]})),',
             '"input": request.apply(lambda rid: json.dumps({"SpotInstanceRequestIds": [rid, "sir-*"]})),',
             AWS_TESTS, "the cancel schedule names exactly its own request"),
    Mutation("spot-aws", "components/aws/lifetime.py",
             "            tag_spot_request(exp, request)\n", "",
             AWS_TESTS, "the request carries the instance's managed-by, stack and expires-at tags"),
    Mutation("spot-aws", "components/aws/lifetime.py",
             "            allow_own_spot_cancel(exp.name, identity, request, exp.ctx, exp.opts())\n", "",
             AWS_TESTS, "the watchdog may cancel its own request"),
    Mutation("spot-aws", "components/aws/identity.py",
             '"Resource": request_arn},', '"Resource": "*"},',
             AWS_TESTS, "the instance role cancels exactly its own request's ARN"),
    Mutation("spot-aws", "components/aws/identity.py",
             '                           "Resource": _one_or_list(request_arns)})',
             '                           "Resource": "*"})',
             AWS_TESTS, "the scheduler role cancels exactly the experiment's request"),
    Mutation("spot-aws", "components/userdata/settings.py",
             'spot_recover=spec.market == "spot" and spec.spot.recover is True,',
             "spot_recover=False,",
             AWS_TESTS, "the watchdog is told that a reclaim is the cloud's to stop"),
    Mutation("spot-aws", "components/spec/spot.py",
             "    return market == \"spot\" and checkpoints and nodes == 1",
             "    return market == \"spot\" and checkpoints",
             SPEC_TESTS, "a cluster does not recover by default"),
    Mutation("spot-aws", "components/spec/spot.py",
             "    if exp.market != \"spot\":\n        return [(\"spot.recover\"",
             "    if False:\n        return [(\"spot.recover\"",
             SPEC_TESTS, "recover: true on on-demand is refused"),
    Mutation("spot-aws", "components/spec/spot.py",
             "    if exp.nodes > 1:", "    if exp.nodes > 99:",
             SPEC_TESTS, "recover: true on a cluster is refused"),
    Mutation("spot-aws", "gpulease/core/compute/aws_forms.py",
             '    if spot_type is UNKNOWN or spot_type != "persistent" or _ends_in_time(until, expires):',
             "    if True:",
             PACK_TESTS, "an instance's persistent request without an end is flagged"),
    Mutation("spot-aws", "policies/guardrails/deadlines.py",
             "and first_stop - first_cancel < SCHEDULER_PRECISION:",
             "and first_stop - first_cancel < timedelta(0):",
             PACK_TESTS, "a cancel that fires with the termination is not before it"),
    Mutation("spot-aws", "policies/guardrails/deadlines.py",
             "        if form.cancels is None:\n            return problem",
             "        if True:\n            return problem",
             PACK_TESTS, "the kit's own cancel schedule ends a persistent request"),
    Mutation("spot-aws", "gpulease/review/preconditions.py",
             '        if behaviour not in ("stop", "hibernate"):',
             '        if behaviour not in ("stop", "hibernate", "terminate"):',
             PRECONDITION_TESTS, "RunInstances: a persistent request stops or hibernates"),
    Mutation("spot-aws", "gpulease/review/replacement.py",
             '        notes += [f"{t}: {what}" for t, what in rule.on_replace.items() if any(_covers(t, p) for p in triggers)]',
             "",
             REHEARSAL_TESTS, "the rehearsal says a replaced spot instance's request is cancelled first"),
]
