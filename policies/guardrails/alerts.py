"""budget-alert and verify-long-run: warn before the money is gone, and try the job small before the long run.

``budget-alert`` (stack, mandatory): on a cloud with a budget service (AWS; Alibaba Cloud's provider has none, see
the clouds table), every GPU compute unit (an instance, a group, a fleet, a node group: ``gpulease.core.compute``)
that carries a budget tag is covered by a budget in the same stack: a cost
budget whose tag filter matches one of the instance's tags (``costFilters`` ``TagKeyValue`` values
``user:<key>$<value>``, or a ``filterExpression`` on tags), whose limit is not above the instance's budget tag, and
that notifies someone (an e-mail address or an SNS topic). With ``budget-worst-case`` (the worst case fits the
budget) this is the budget rule: a stack passes only when its worst case fits AND someone hears about it if the
spend runs ahead anyway. Unknown values during preview skip only what they hide.

``verify-long-run`` (stack, advisory): a GPU compute unit whose ``max-runtime-hours`` tag is above ``longRunHours``
(12 by default) declares a verification run (the ``gpulease:verify`` tag, set from the spec's ``verify``): a
short run that checks the GPU is used, a batch fits and training resumes from a checkpoint is cheaper than
finding out hours into the long one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import ReportViolation, StackValidationArgs, StackValidationPolicy

from gpulease.core import resources as rt
from gpulease.core import vocabulary as v
from gpulease.core.money import usd

from . import common as c

BUDGET_TYPES = {"aws": (rt.AWS_BUDGET,)}
"""The budget resources each cloud's provider offers (pulumi-alicloud 4.0.0 has none)."""


def _tag_filters(props: Any) -> set[tuple[str, str]] | None:
    """The (key, value) tags a budget filters on; None when not known during preview."""
    found: set[tuple[str, str]] = set()
    for item in c.items(props, "costFilters"):
        if item is c.UNKNOWN:
            return None
        name, values = c.known(item, "name"), c.items(item, "values")
        if name is c.UNKNOWN or c.UNKNOWN in values:
            return None
        if name == "TagKeyValue":
            for value in values:
                key, sep, tag_value = str(value).partition("$")
                if sep:
                    found.add((key.removeprefix("user:"), tag_value))
    tags = c.known(props, "filterExpression", "tags")
    if tags is c.UNKNOWN:
        return None
    if isinstance(tags, Mapping):
        key = c.known(tags, "key")
        if key is c.UNKNOWN:
            return None
        for value in c.items(tags, "values"):
            if value is c.UNKNOWN:
                return None
            found.add((str(key).removeprefix("user:"), str(value)))
    return found


def _notifies(props: Any) -> bool | None:
    """Whether the budget notifies anyone; None when not known during preview."""
    notifications = c.items(props, "notifications")
    if c.known(props, "notifications") is c.UNKNOWN or c.UNKNOWN in notifications:
        return None
    for item in notifications:
        emails, topics = c.items(item, "subscriberEmailAddresses"), c.items(item, "subscriberSnsTopicArns")
        if emails or topics:
            return True
    return False


def _budget_alert(args: StackValidationArgs, report: ReportViolation) -> None:
    clouds = set(c.config_value(args.get_config(), "requireOn", ["aws"]))
    budgets = [r for r in args.resources if r.resource_type in {t for cl in clouds for t in BUDGET_TYPES.get(cl, ())}]
    for unit, res in c.units(args.resources):
        if unit.form.cloud not in clouds or not unit.accelerated:  # aws-native and Karpenter forms are AWS's
            continue
        tags = unit.tags
        budget = rt.number(tags.get(v.TAG_BUDGET_USD)) if tags.get(v.TAG_BUDGET_USD) is not c.UNKNOWN else None
        if budget is None:
            continue  # no budget tag: budget-tags reports it
        known = {(k, val) for k, val in tags.items() if isinstance(val, str)}
        problems, unknown = [], False
        for candidate in budgets:
            filters, notifies = _tag_filters(candidate.props), _notifies(candidate.props)
            kind, limit = c.known(candidate.props, "budgetType"), c.known(candidate.props, "limitAmount")
            if filters is None or notifies is None or c.UNKNOWN in (kind, limit):
                unknown = True
                continue
            if not filters & known:
                continue
            name = c.display(candidate.resource_type, candidate.name)
            amount = rt.number(limit)
            if kind != "COST":
                problems.append(f"{name} is a {kind} budget, not COST")
            elif not notifies:
                problems.append(f"{name} notifies nobody (no e-mail address, no SNS topic)")
            elif amount is None or amount > budget * 1.000001:
                problems.append(f"{name} has a limit of {limit!r} USD, above the {v.TAG_BUDGET_USD} of {budget:g}")
            else:
                break
        else:
            if unknown and not problems:
                continue  # a budget not known during preview may cover it
            what = c.display_unit(unit)
            stack = tags.get(v.TAG_STACK)
            hint = f"TagKeyValue user:{v.TAG_STACK}${stack}" if isinstance(stack, str) else "one of its tags"
            report(f"{what} has a budget of {usd(budget)} and no budget alert covers it"
                   + (f" ({'; '.join(problems)})" if problems else "")
                   + f"; accepted: a COST budget in the stack filtered by {hint}, limited to at most {usd(budget)}, "
                   "notifying an e-mail address or an SNS topic (the spec's budgetAlerts)", res.urn)


def _verify_long_run(args: StackValidationArgs, report: ReportViolation) -> None:
    long_run = float(c.config_value(args.get_config(), "longRunHours", 12))
    for unit, res in c.units(args.resources):
        if not unit.accelerated:
            continue
        tags = unit.tags
        hours = tags.get(v.TAG_MAX_RUNTIME_HOURS)
        if hours is c.UNKNOWN or tags.get(v.TAG_VERIFY) is c.UNKNOWN:
            continue
        number = rt.number(hours)
        if number is None or number <= long_run or tags.get(v.TAG_VERIFY):
            continue
        report(f"{c.display_unit(unit)} may run {number:g} h (more than {long_run:g} h) without a verification run; "
               "accepted: a `verify` section (a few steps that check the GPU is used, a batch fits and training "
               "resumes from a checkpoint), e.g. verify: {command: python train.py --max-steps 50, maxMinutes: 20, "
               "resumeCommand: python train.py --resume}", res.urn)


budget_alert = c.judges(StackValidationPolicy(
    name="budget-alert",
    description="On a cloud with a budget service, every budgeted GPU instance is covered by a budget that alerts.",
    validate=_budget_alert,
    enforcement_level=c.level("mandatory"),
    config_schema=c.schema(
        {
            "requireOn": {"type": "array", "items": {"type": "string", "enum": ["aws"]}, "default": ["aws"],
                          "description": "Clouds whose budgeted GPU instances need a budget alert in the stack."},
        }
    ),
), (*c.UNIT_TYPES, rt.AWS_BUDGET))

verify_long_run = c.judges(StackValidationPolicy(
    name="verify-long-run",
    description="A long GPU run declares a short verification run first.",
    validate=_verify_long_run,
    enforcement_level=c.level("advisory"),
    config_schema=c.schema(
        {
            "longRunHours": {"type": "number", "exclusiveMinimum": 0, "default": 12,
                             "description": "A run whose max-runtime-hours is above this needs a verification."},
        }
    ),
), c.UNIT_TYPES)

POLICIES = [budget_alert, verify_long_run]
