"""budget-alert and verify-long-run on hand-made resource sets."""

from __future__ import annotations

from gpulease.core import vocabulary as v
from tests.support.policy import (
    AWS_INSTANCE,
    UNKNOWN,
    analyze,
    aws_budget,
    aws_gpu,
    aws_schedule_for,
    checkpoint_bucket,
    compliant_ali_stack,
    found,
    res,
    tags,
)


def _stack(*extra):
    return [res(AWS_INSTANCE, "gpu", aws_gpu()), aws_schedule_for("gpu"), *checkpoint_bucket(), *extra]


def test_a_budget_filtered_by_a_tag_expression_or_an_sns_topic_counts() -> None:
    expression = aws_budget(costFilters=[], filterExpression={"tags": {"key": v.TAG_EXPERIMENT, "values": ["exp1"]}})
    assert found(analyze(*_stack(expression)), "budget-alert") == []
    sns = aws_budget(notifications=[{"notificationType": "ACTUAL", "threshold": 80, "comparisonOperator": "GREATER_THAN",
                                     "thresholdType": "PERCENTAGE", "subscriberSnsTopicArns": ["arn:aws:sns:us-east-1:1:b"]}])
    assert found(analyze(*_stack(sns)), "budget-alert") == []


def test_a_usage_budget_or_one_for_other_tags_does_not_count() -> None:
    [(_, level, name, message)] = found(analyze(*_stack(aws_budget(budgetType="USAGE"))), "budget-alert")
    assert (level, name) == ("mandatory", "gpu") and "is a USAGE budget, not COST" in message
    [(_, _, _, message)] = found(analyze(*_stack(aws_budget(tag=(v.TAG_EXPERIMENT, "exp2")))), "budget-alert")
    assert "no budget alert covers it" in message


def test_values_unknown_during_preview_are_not_judged() -> None:
    pending = aws_budget(costFilters=[{"name": "TagKeyValue", "values": [UNKNOWN]}])
    assert found(analyze(*_stack(pending)), "budget-alert") == []


def test_alibaba_cloud_needs_no_budget_unless_configured() -> None:
    assert found(analyze(*compliant_ali_stack()), "budget-alert") == []


def test_verify_long_run_reads_the_tags_and_its_threshold() -> None:
    long_run = aws_gpu(tags=tags(max_hours="24"))
    stack = [res(AWS_INSTANCE, "gpu", long_run), aws_schedule_for("gpu"), *checkpoint_bucket(), aws_budget()]
    [(_, level, name, message)] = found(analyze(*stack), "verify-long-run")
    assert (level, name) == ("advisory", "gpu") and "may run 24 h (more than 12 h)" in message
    assert found(analyze(*stack, config={"verify-long-run": {"longRunHours": 24}}), "verify-long-run") == []
    verified = aws_gpu(tags=tags(max_hours="24") | {v.TAG_VERIFY: "20min+resume"})
    stack[0] = res(AWS_INSTANCE, "gpu", verified)
    assert found(analyze(*stack), "verify-long-run") == []


def test_a_budget_above_the_tag_or_notifying_nobody_does_not_count() -> None:
    [(_, _, _, above)] = found(analyze(*_stack(aws_budget(limitAmount="400"))), "budget-alert")
    assert "(Budget 'budget' has a limit of '400' USD, above the gpulease:budget-usd of 40)" in above
    silent = [{"comparisonOperator": "GREATER_THAN", "notificationType": "ACTUAL", "threshold": 80,
               "thresholdType": "PERCENTAGE"}]
    [(_, _, _, nobody)] = found(analyze(*_stack(aws_budget(notifications=silent))), "budget-alert")
    assert "(Budget 'budget' notifies nobody (no e-mail address, no SNS topic))" in nobody
    assert found(analyze(*_stack(aws_budget(limitAmount="40.00"))), "budget-alert") == []
