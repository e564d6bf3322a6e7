"""The stack's budget alert as rendered (AWS Budgets; none on Alibaba Cloud), checked through the policy pack, and
accepted by the Budgets API (moto) in the shape the provider sends."""

from __future__ import annotations

import dataclasses

import pytest

from components.alicloud.cloud import Alicloud
from components.aws.budget import budget_args
from components.aws.cloud import Aws
from components.spec.experiment import ExperimentSpec
from gpulease.core import vocabulary as v
from gpulease.review.policy_runner import PolicyRunner
from tests.support.alicloud import ali_experiment, render_ali
from tests.support.clock import FIXED_NOW
from tests.support.specs import experiment, render_experiment

BUDGET = "aws:budgets/budget:Budget"
INSTANCE = "aws:ec2/instance:Instance"


def _violations(r, policy: str) -> list[tuple[str, str]]:
    return [(x.level, x.detail) for x in PolicyRunner().analyze(r, now=FIXED_NOW).violations if x.policy == policy]


def test_one_budget_per_stack_filtered_by_its_tag_with_an_email_per_threshold_actual_and_forecast() -> None:
    r = render_experiment(experiment(budgetAlerts={"emails": ["alice@example.com", "lead@example.com"],
                                                   "thresholds": [90, 50]}), stack="lora")
    assert r.error is None, r.error
    budget = r.one(BUDGET)
    inputs = budget.inputs
    assert inputs["name"] == "gpulease-llm-finetune-lora"
    assert (inputs["budgetType"], inputs["limitAmount"], inputs["limitUnit"], inputs["timeUnit"]) == (
        "COST", "40", "USD", "ANNUALLY")
    assert inputs["costFilters"] == [{"name": "TagKeyValue", "values": ["user:gpulease:stack$lora"]}]
    assert [(n["threshold"], n["notificationType"]) for n in inputs["notifications"]] == [
        (50, "ACTUAL"), (50, "FORECASTED"), (90, "ACTUAL"), (90, "FORECASTED")]
    for n in inputs["notifications"]:
        assert n["comparisonOperator"] == "GREATER_THAN" and n["thresholdType"] == "PERCENTAGE"
        assert n["subscriberEmailAddresses"] == ["alice@example.com", "lead@example.com"]
    # The filter matches the tag every resource of the stack carries, the instance included.
    assert r.one(INSTANCE).inputs["tags"][v.TAG_STACK] == "lora"
    assert inputs["tags"][v.TAG_STACK] == "lora" and inputs["tags"][v.TAG_OWNER] == "alice@example.com"
    assert _violations(r, "budget-alert") == []


def test_the_owner_hears_at_50_80_100_percent_by_default() -> None:
    r = render_experiment(experiment())
    notifications = r.one(BUDGET).inputs["notifications"]
    assert sorted({n["threshold"] for n in notifications}) == [50, 80, 100]
    assert {tuple(n["subscriberEmailAddresses"]) for n in notifications} == {("alice@example.com",)}
    assert len(notifications) == 6


def test_the_pack_refuses_an_aws_stack_whose_budget_alert_is_missing_or_wrong() -> None:
    r = render_experiment(experiment(), stack="lora")
    without = dataclasses.replace(r, resources=[x for x in r.resources if x.type != BUDGET])
    [(level, message)] = _violations(without, "budget-alert")
    assert level == "mandatory"
    assert "has a budget of $40.00 and no budget alert covers it" in message
    assert "a COST budget in the stack filtered by TagKeyValue user:gpulease:stack$lora" in message
    budget = r.one(BUDGET)
    for change, why in [
        ({"costFilters": [{"name": "TagKeyValue", "values": ["user:gpulease:stack$other"]}]}, None),
        ({"limitAmount": "400"}, "has a limit of '400' USD, above the gpulease:budget-usd of 40"),
        ({"notifications": [{**n, "subscriberEmailAddresses": []} for n in budget.inputs["notifications"]]},
         "notifies nobody"),
    ]:
        inputs = {**budget.inputs, **change}
        changed = dataclasses.replace(budget, inputs=inputs, outputs=dict(inputs), input_struct=None,
                                      output_struct=None)
        wrong = dataclasses.replace(r, resources=[changed if x is budget else x for x in r.resources])
        [(level, message)] = _violations(wrong, "budget-alert")
        assert level == "mandatory" and (why is None or why in message), message


def test_alibaba_cloud_has_no_budget_resource_and_says_so() -> None:
    r = render_ali(ali_experiment())
    assert r.error is None, r.error
    assert not [x for x in r.resources if "budget" in x.type.lower()]
    assert _violations(r, "budget-alert") == []  # nothing to create there: the capability table says so
    assert Alicloud.capabilities["budget-alerts"].given is False
    assert "no budget resource" in Alicloud.capabilities["budget-alerts"].gap
    assert Aws.capabilities["budget-alerts"].given is True
    assert "activated for cost allocation" in Aws.capabilities["budget-alerts"].gap


def test_the_instance_carries_its_worst_case_hourly_price_for_the_watchdog() -> None:
    spot = render_experiment(experiment(maxSpotPriceUsd=0.5)).one(INSTANCE).inputs["tags"]
    assert spot[v.TAG_MAX_HOURLY_USD] == "0.5"
    on_demand = render_experiment(experiment(market="on-demand", onDemandReason="a capacity reservation for the deadline")).one(INSTANCE)
    assert float(on_demand.inputs["tags"][v.TAG_MAX_HOURLY_USD]) > 0.5  # g5.xlarge on demand in us-east-1


@pytest.mark.parametrize(("verify", "hours", "flagged"), [
    (None, 24, True),
    ({"command": "python t.py --max-steps 20", "maxMinutes": 20, "resumeCommand": "python t.py --resume"}, 24, False),
    (None, 8, False),
])
def test_verify_long_run_flags_a_long_run_without_verification(verify, hours, flagged) -> None:
    spec = experiment(maxRuntimeHours=hours, budgetUsd=200, **({"verify": verify} if verify else {}))
    r = render_experiment(spec)
    assert r.error is None, r.error
    tags = r.one(INSTANCE).inputs["tags"]
    assert tags.get(v.TAG_VERIFY) == ("20min+resume" if verify else None)
    found = _violations(r, "verify-long-run")
    if flagged:
        [(level, message)] = found
        assert level == "advisory" and "may run 24 h (more than 12 h) without a verification run" in message
    else:
        assert found == []


def test_aws_budgets_accepts_the_budget_in_the_shape_the_provider_sends(aws) -> None:
    """The same inputs through the Budgets API (moto): the budget reads back filtered by the stack's tag."""
    spec = ExperimentSpec.model_validate(experiment(budgetAlerts={"thresholds": [80]}))
    args = budget_args(spec, "lora")
    client = aws.client("budgets")
    client.create_budget(
        AccountId="123456789012",
        Budget={"BudgetName": args["name"], "BudgetType": args["budget_type"], "TimeUnit": args["time_unit"],
                "BudgetLimit": {"Amount": args["limit_amount"], "Unit": args["limit_unit"]},
                "CostFilters": {f["name"]: f["values"] for f in args["cost_filters"]}},
        NotificationsWithSubscribers=[
            {"Notification": {"NotificationType": n["notification_type"], "ComparisonOperator": n["comparison_operator"],
                              "Threshold": n["threshold"], "ThresholdType": n["threshold_type"]},
             "Subscribers": [{"SubscriptionType": "EMAIL", "Address": a} for a in n["subscriber_email_addresses"]]}
            for n in args["notifications"]],
    )
    read = client.describe_budget(AccountId="123456789012", BudgetName="gpulease-llm-finetune-lora")["Budget"]
    assert read["CostFilters"] == {"TagKeyValue": ["user:gpulease:stack$lora"]}
    assert read["BudgetLimit"] == {"Amount": "40", "Unit": "USD"}
    kinds = client.describe_notifications_for_budget(AccountId="123456789012", BudgetName=args["name"])
    assert sorted(n["NotificationType"] for n in kinds["Notifications"]) == ["ACTUAL", "FORECASTED"]


def test_with_the_most_tags_the_spec_accepts_no_resource_exceeds_the_clouds_limit() -> None:
    """The hourly-price tag is on the instance alone and the retain tag on the disk and bucket alone: the spec's
    count (the most any one resource carries) holds for both."""
    ali = render_ali(ali_experiment(tags={f"k{i}": "v" for i in range(9)}))
    assert ali.error is None, ali.error
    counts = {x.type: len(x.inputs["tags"]) for x in ali.resources if isinstance(x.inputs.get("tags"), dict)}
    assert max(counts.values()) == 20 and counts["alicloud:ecs/instance:Instance"] == 20
    aws = render_experiment(experiment(tags={f"k{i}": "v" for i in range(39)}))
    assert aws.error is None, aws.error
    counts = {x.type: len(x.inputs["tags"]) for x in aws.resources if isinstance(x.inputs.get("tags"), dict)}
    assert max(counts.values()) == 50 and counts[INSTANCE] == 50


def test_the_budget_counts_from_the_stacks_own_creation_and_keeps_that_start() -> None:
    # Not the calendar year: a yearly budget would reset on 1 January, and a stack name used again would inherit
    # the earlier stack's spend under the same tag.
    r = render_experiment(experiment(), stack="lora")
    (start,) = [x for x in r.of_type("time:index/static:Static") if x.name.endswith("-budget-start")]
    assert start.inputs["rfc3339"] == v.rfc3339(FIXED_NOW.replace(second=0, microsecond=0))
    assert start.ignore_changes == ["rfc3339"]
    assert r.one(BUDGET).inputs["timePeriodStart"] == FIXED_NOW.strftime("%Y-%m-%d_%H:%M")
