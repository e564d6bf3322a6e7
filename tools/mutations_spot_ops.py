"""``make mutate`` rows for spot requests in the inventory and the reaper, and the cost while a reclaim has stopped
an instance: whose tags judge a request, what the listing keeps, cancel before terminate, never an unmanaged
request, and what a stopped instance is billed for."""

from __future__ import annotations

from tools.mutation_row import Mutation

SPOT = ("tests/inventory/test_spot_requests.py",)
STOPPED = ("tests/core/test_cost_stopped.py",)

MUTATIONS = [
    Mutation("reaper", "gpulease/inventory/resources.py",
             "return self.tags if TAG_MANAGED_BY in self.tags else self.instance_tags", "return self.tags", SPOT,
             "an untagged spot request is judged by its instance's tags"),
    Mutation("reaper", "gpulease/inventory/resources.py",
             "return self.tags if TAG_MANAGED_BY in self.tags else self.instance_tags",
             "return self.instance_tags or self.tags", SPOT,
             "a request's own managed-by tag decides before its instance's"),
    Mutation("reaper", "gpulease/inventory/collect.py",
             'if is_managed(request.deciding_tags) or request.request_type == "persistent":',
             "if is_managed(request.deciding_tags):", SPOT,
             "ls lists every live persistent request, managed or not"),
    Mutation("reaper", "gpulease/inventory/collect.py", "return sorted(found, key=lambda r: not r.orphaned)",
             "return found", SPOT, "a persistent request whose instance is gone is listed first"),
    Mutation("reaper", "gpulease/inventory/decide.py", "        if request.id in cancelled or not is_managed(tags):",
             "        if request.id in cancelled:", SPOT, "the reaper never cancels an unmanaged spot request"),
    Mutation("reaper", "gpulease/inventory/decide.py",
             "        if request is not None and not is_managed(request.deciding_tags):", "        if False:", SPOT,
             "an instance whose request is not ours is not terminated (nobody would cancel the request)"),
    Mutation("reaper", "gpulease/inventory/acting.py", "    failed = {o.id for o in cancel_outcomes if o.status == FAILED}",
             "    failed: set[str] = set()", SPOT, "no instance is terminated after its request's cancel failed"),
    Mutation("reaper", "gpulease/inventory/reaper.py",
             '    cancelled = acting.batch(cancels, min(size, CANCEL_BATCH), cancel, "cancelled", EC2_ERRORS)\n',
             '    outcomes += acting.batch(by_action.get(TERMINATE, []), size, terminate, "terminating", EC2_ERRORS)\n'
             '    cancelled = acting.batch(cancels, min(size, CANCEL_BATCH), cancel, "cancelled", EC2_ERRORS)\n',
             SPOT, "spot requests are cancelled before their instances are terminated"),
    Mutation("reaper", "gpulease/inventory/pricing.py", "        if instance.id not in volume.attached_to:\n            continue\n",
             "", SPOT,
             "a stopped instance is billed for its own volumes only"),
    Mutation("prices", "gpulease/core/cost/stopped.py", "        if line.hourly_usd is None:\n            return None\n",
             "        if line.hourly_usd is None:\n            continue\n", STOPPED,
             "an unpriced disk makes the stopped figure unknown, never smaller"),
    Mutation("prices", "gpulease/core/cost/pricing.py",
             'as_of=prices.item_date("publicIpv4Hour") if prices else None, keeps_billing_stopped=True)',
             'as_of=prices.item_date("publicIpv4Hour") if prices else None)', STOPPED,
             "an address keeps billing while its instance is stopped"),
    Mutation("prices", "gpulease/core/cost/stopped.py",
             'return (_folded(market.get("marketType")) == "spot" and _folded(spot.get("spotInstanceType")) == "persistent"',
             'return (_folded(market.get("marketType")) == "spot"', STOPPED,
             "only a persistent request's instance is stopped (not terminated) by a reclaim"),
]
