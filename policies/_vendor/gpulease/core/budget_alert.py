"""The budget alert of a stack, as the program creates it, the policy pack checks it and ``gpulease status`` reads
it: its name and the cost filter that ties it to the stack's resources.

A stack's resources all carry ``gpulease:stack=<stack>``; AWS Budgets filters costs by a cost-allocation tag as
``TagKeyValue`` values of the form ``user:<key>$<value>`` (user-defined tags carry the ``user:`` prefix:
https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/cost-alloc-tags.html; the filter form: pulumi_aws
``budgets.Budget`` docstring, "Create a cost filter using resource tags"). The tag only counts once it is
activated for cost allocation in the billing account (docs/run.md#budget-alerts)."""

from __future__ import annotations

import re

from gpulease.core import vocabulary as v

COST_ALLOCATION_TAG = v.TAG_STACK
"""The tag a stack's budget filters on: every taggable resource of the stack carries it."""
BUDGET_NAME_MAX = 100
"""AWS Budgets: BudgetName is 1-100 characters without ``:`` or ``\\``
(https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_budgets_Budget.html)."""


def cost_filter_value(stack: str) -> str:
    """The ``TagKeyValue`` filter value that selects the stack's costs."""
    return f"user:{COST_ALLOCATION_TAG}${stack}"


def alert_emails(emails: list[str] | None, owner: str) -> list[str]:
    """Who a stack's budget alerts go to: ``budgetAlerts.emails``, else the owner."""
    return list(emails or [owner])


def budget_name(project: str, stack: str) -> str:
    """``gpulease-<project>-<stack>``, in the characters every budget name accepts, at most 100 characters."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", f"gpulease-{project}-{stack}")[:BUDGET_NAME_MAX]
