"""``make mutate`` rows for the persistent spot request's end on AWS (area "spot-end"): no stale ``valid_until``, the
pack's cancel checks (what the input names, 60 s ahead, any case, a launch template's request), the empty request
id, the reaper's cancel of a request an untagged instance holds, ``gpulease down``'s cancel and check, and the costs
of a stopped instance."""

from __future__ import annotations

from tools.mutation_row import Mutation

AWS_TESTS = ("tests/components/aws/test_spot_recovery.py",)
REHEARSAL_TESTS = ("tests/integration/test_rehearsal.py",)
PACK_TESTS = ("tests/policies/test_programs.py",)
INVENTORY_TESTS = ("tests/inventory/test_spot_request_end.py",)
DOWN_TESTS = ("tests/cli/test_down.py",)
COST_TESTS = ("tests/core/test_cost_stopped.py",)

MUTATIONS = [
    Mutation("spot-end", "components/aws/instance.py",
             'spot = {"instance_interruption_behavior": "stop", "spot_instance_type": "persistent"}',
             'spot = {"instance_interruption_behavior": "stop", "spot_instance_type": "persistent", '
             '"valid_until": "2026-12-01T16:00:00Z"}',
             AWS_TESTS + REHEARSAL_TESTS, "a recovering request holds no end of its own, stale after a renewal"),
    Mutation("spot-end", "components/aws/lifetime.py",
             "    if not rid:\n", "    if rid is None:\n",
             AWS_TESTS, "an empty spot request id fails the deployment"),
    Mutation("spot-end", "components/aws/lifetime.py",
             "value=exp.tags[key], opts=exp.opts(retain_on_delete=True))", "value=exp.tags[key], opts=exp.opts())",
             AWS_TESTS, "the request keeps its tags when the stack deletes them"),
    Mutation("spot-end", "policies/guardrails/deadlines.py",
             "    if set(data) != {REQUEST_IDS}:\n", "    if REQUEST_IDS not in data:\n",
             PACK_TESTS, "the cancel's input holds nothing but SpotInstanceRequestIds (no DryRun)"),
    Mutation("spot-end", "policies/guardrails/deadlines.py",
             "    if isinstance(own, str) and own and ids[0] != own:\n", "    if False:\n",
             PACK_TESTS, "the cancel names this unit's own request"),
    Mutation("spot-end", "policies/guardrails/deadlines.py",
             "isinstance(ids, list) and len(ids) == 1 and", "isinstance(ids, list) and",
             PACK_TESTS, "the cancel names one request (one bad id fails the whole call)"),
    Mutation("spot-end", "policies/guardrails/deadlines.py",
             "first_stop - first_cancel < SCHEDULER_PRECISION", "first_stop - first_cancel <= timedelta(0)",
             PACK_TESTS, "the cancel fires at least 60 s before the termination"),
    Mutation("spot-end", "gpulease/core/compute/aws_forms.py",
             '    return value.strip().lower() if isinstance(value, str) else value\n',
             '    return value\n',
             PACK_TESTS, "Spot and Persistent are read in any case"),
    Mutation("spot-end", "policies/guardrails/deadlines.py",
             "    for tpl in unit.templates:\n        if tpl.form is not None",
             "    for tpl in ():\n        if tpl.form is not None",
             PACK_TESTS, "an instance's persistent request from its launch template is judged"),
    Mutation("spot-end", "gpulease/inventory/decide.py",
             "            if expired:\n                cancelled.add(request.id)",
             "            if False:\n                cancelled.add(request.id)",
             INVENTORY_TESTS, "an expired managed request an untagged instance holds is cancelled"),
    Mutation("spot-end", "gpulease/lifecycle/teardown.py",
             "                cancelled, ended = cancel_with_strays(clients[0], stack, tracked)",
             "                cancelled, ended = [], []",
             DOWN_TESTS, "gpulease down cancels the stack's spot requests"),
    Mutation("spot-end", "gpulease/lifecycle/teardown.py",
             "        if still:\n", "        if False:\n",
             DOWN_TESTS, "gpulease down fails when a request is still open after the destroy"),
    Mutation("spot-end", "gpulease/core/cost/estimate.py",
             "None if name in pricer.unsized else ", "",
             COST_TESTS, "a disk of unknown size makes the stopped figure unknown"),
    Mutation("spot-end", "gpulease/cli/ls.py",
             "(*inventory.volumes, *inventory.attached_volumes)", "(*inventory.volumes,)",
             INVENTORY_TESTS, "ls counts every volume attached to a stopped instance"),
]
