"""The stack's budget alert on AWS: one ``aws.budgets.Budget`` for the whole stack.

A cost budget of ``budgetUsd`` USD (a sweep's budget is shared by its runs, so it is the stack's), yearly
(``ANNUALLY``: an experiment lives at most a week, and its retained disk and bucket keep costing under the same tag
afterwards), filtered by the stack's cost-allocation tag (``gpulease.core.budget_alert``), with one e-mail
notification per threshold for the actual spend and one for the forecast, to ``budgetAlerts.emails`` (the owner by
default). AWS sends "actual" when the spend passes the threshold and "forecasted" when the forecast for the period
does (https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_budgets_Notification.html).

The budget's period is the stack's own: it starts when the stack is created (``time_period_start``, recorded once
in a ``pulumiverse_time.Static`` like the deadline). Without a start AWS "defaults to the start of your chosen time
period" (https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_budgets_TimePeriod.html): a
yearly budget would reset on 1 January, and a stack name used again would count the earlier stack's spend under the
same tag against the new budget.

What mocks cannot show, said in docs/run.md: the tag must be activated for cost allocation in the billing account
before costs are filtered by it, and budget data is refreshed up to three times a day, 8-12 hours apart
(https://docs.aws.amazon.com/cost-management/latest/userguide/budgets-managing-costs.html).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulumi
import pulumi_aws as aws
import pulumiverse_time as time_provider

from components.aws.instance import plain_price
from gpulease.core import clock
from gpulease.core import vocabulary as v
from gpulease.core.budget_alert import alert_emails, budget_name, cost_filter_value

if TYPE_CHECKING:  # the spec's types only: at run time a cloud folder needs none of the spec's code
    from components.spec.experiment import ExperimentSpec

NOTIFICATION_TYPES = ("ACTUAL", "FORECASTED")


def budget_args(spec: ExperimentSpec, stack: str) -> dict:
    """The budget's inputs (no Pulumi objects: the tests and the docs read the same dict)."""
    emails = alert_emails(spec.budget_alerts.emails, spec.owner)
    return {
        "name": budget_name(spec.project, stack),
        "budget_type": "COST",
        "limit_amount": plain_price(spec.budget_usd),
        "limit_unit": "USD",
        "time_unit": "ANNUALLY",
        "cost_filters": [{"name": "TagKeyValue", "values": [cost_filter_value(stack)]}],
        "notifications": [
            {"comparison_operator": "GREATER_THAN", "notification_type": kind, "threshold": threshold,
             "threshold_type": "PERCENTAGE", "subscriber_email_addresses": emails}
            for threshold in spec.budget_alerts.thresholds for kind in NOTIFICATION_TYPES
        ],
    }


def period_start(rfc3339: str) -> str:
    """AWS Budgets' time format (``2017-01-01_12:00``, pulumi_aws ``budgets.Budget`` docstring) of an RFC 3339 time,
    to the minute."""
    return v.parse_rfc3339(rfc3339).strftime("%Y-%m-%d_%H:%M")


class AwsBudget:
    """The budget part of the AWS cloud."""

    def create_budget_alert(self, name: str, spec: ExperimentSpec, stack: str, tags: dict,
                            parent: pulumi.Resource) -> pulumi.Resource:
        # The stack's creation, recorded once (ignore_changes): later updates keep the same period start.
        created = time_provider.Static(
            f"{name}-budget-start", rfc3339=v.rfc3339(clock.utcnow().replace(second=0, microsecond=0)),
            opts=pulumi.ResourceOptions(parent=parent, ignore_changes=["rfc3339"]),
        )
        return aws.budgets.Budget(f"{name}-budget", **budget_args(spec, stack), tags=tags,
                                  time_period_start=created.rfc3339.apply(period_start),
                                  opts=pulumi.ResourceOptions(parent=parent))
