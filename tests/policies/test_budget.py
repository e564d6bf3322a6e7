"""budget-tags on every taggable resource, and the worst case against the budget at stack level."""

from __future__ import annotations

import pytest

from gpulease.core import vocabulary as v
from gpulease.review.policy_runner import PolicyRunner
from tests.support.policy import (
    ALI_INSTANCE,
    AWS_INSTANCE,
    NOW,
    ali_checkpoint_bucket,
    ali_gpu,
    analyze,
    aws_gpu,
    aws_schedule_for,
    checkpoint_bucket,
    found,
    res,
    stack,
    tags,
)


def _aws(gpu_inputs: dict, *extra) -> list:
    return [res(AWS_INSTANCE, "gpu", gpu_inputs), aws_schedule_for("gpu"), *checkpoint_bucket(), *extra]


def test_untagged_taggable_resources_miss_every_required_tag():
    result = analyze(*_aws(aws_gpu()), res("aws:ebs/volume:Volume", "disk", {"size": 10, "encrypted": True,
                                                                               "tags": tags(retain="true")}),
                     res("aws:ec2/securityGroup:SecurityGroup", "sg", {"description": "x"}))
    assert found(result, "budget-tags") == [
        ("budget-tags", "mandatory", "sg", "SecurityGroup 'sg' is missing required tags: " + ", ".join(v.REQUIRED_TAGS))
    ]


def test_resources_that_take_no_tags_are_not_judged():
    # BucketPublicAccessBlock and Schedule take no tags input in the SDK: nothing to require.
    result = analyze(*_aws(aws_gpu()))
    assert found(result, "budget-tags") == []


def test_invalid_values_are_named():
    bad = tags(owner="alice", budget="-5", expires="2026-12-01 10:00", max_hours="500", managed="me",
               checkpoint="ftp://x")
    result = analyze(*_aws(aws_gpu(tags=bad)))
    (hit,) = found(result, "budget-tags")
    assert hit[:3] == ("budget-tags", "mandatory", "gpu")
    assert hit[3] == (
        "Instance 'gpu' has invalid tags: "
        f"{v.TAG_OWNER}='alice' is not an email address, e.g. alice@example.com; "
        f"{v.TAG_BUDGET_USD}='-5' is not a positive number of USD, e.g. 40; "
        f"{v.TAG_EXPIRES_AT}='2026-12-01 10:00' is not an RFC 3339 timestamp with a UTC offset, e.g. "
        "2026-11-30T10:00:00Z; "
        f"{v.TAG_MAX_RUNTIME_HOURS}='500' is not a number of hours in (0, 168]; "
        f"{v.TAG_CHECKPOINT_URI}='ftp://x' is not s3://bucket/prefix, oss://bucket/prefix or 'none'; "
        f"{v.TAG_MANAGED_BY}='me'; accepted: gpulease"
    )


def test_required_tag_list_is_configurable():
    sg = res("aws:ec2/securityGroup:SecurityGroup", "sg", {"tags": {v.TAG_OWNER: "bob@example.com"}})
    assert found(analyze(sg, config={"budget-tags": {"requiredTags": [v.TAG_OWNER]}}), "budget-tags") == []
    result = analyze(sg, config={"budget-tags": {"requiredTags": [v.TAG_OWNER, "team"]}})
    assert found(result, "budget-tags") == [
        ("budget-tags", "mandatory", "sg", "SecurityGroup 'sg' is missing required tags: team")
    ]


def test_worst_case_over_budget_is_mandatory_when_prices_are_known():
    # g5.xlarge for 8 h (on-demand cap, since no spot cap is set) costs more than a 1 USD budget.
    result = analyze(*_aws(aws_gpu(tags=tags(budget="1"))))
    (hit,) = found(result, "budget-worst-case")
    assert hit[:3] == ("budget-worst-case", "mandatory", None)
    assert hit[3].startswith("worst-case cost $")
    assert "of 'exp1' ($" in hit[3] and f"exceeds budgetUsd $1.00 (the {v.TAG_BUDGET_USD} tag);" in hit[3]
    assert found(result, "budget-unpriced") == []


def test_a_shared_budget_holds_the_whole_stack_and_distinct_budgets_each_experiment():
    def runs(budget_a: str, budget_b: str) -> list:
        out = []
        for name, budget in (("a", budget_a), ("b", budget_b)):
            out += [res(AWS_INSTANCE, name, aws_gpu(tags=tags(budget=budget, experiment=name))),
                    aws_schedule_for(name)]
        return [*out, *checkpoint_bucket()]

    one = found(analyze(*runs("1000", "1000")), "budget-worst-case")
    assert one == []
    # 8.16 USD each: together over a shared 12 USD budget, each alone under it.
    (hit,) = found(analyze(*runs("12", "12")), "budget-worst-case")
    assert "of 'a', 'b'" in hit[3] and f"exceeds budgetUsd $12.00 (the {v.TAG_BUDGET_USD} tag)" in hit[3]
    (hit,) = found(analyze(*runs("12", "5")), "budget-worst-case")
    assert hit[2] == "b" and hit[3].startswith("experiment 'b': worst-case cost $")
    assert f"exceeds its budgetUsd $5.00 (the {v.TAG_BUDGET_USD} tag)" in hit[3]


def test_worst_case_within_budget_passes():
    result = analyze(*_aws(aws_gpu(tags=tags(budget="1000"))))
    assert found(result, "budget-worst-case") == [] and found(result, "budget-unpriced") == []


def test_unpriced_instance_is_advisory_and_never_mandatory():
    # An Alibaba type in a region the catalog has no price for: the budget cannot be checked.
    result = analyze(res(ALI_INSTANCE, "gpu", ali_gpu(tags=tags(budget="1", checkpoint="oss://ali-ckpt/exp1/"))),
                     *ali_checkpoint_bucket(), region="me-east-1")
    assert found(result, "budget-worst-case") == []
    (hit,) = found(result, "budget-unpriced")
    assert hit[:3] == ("budget-unpriced", "advisory", None)
    assert hit[3].startswith("experiment 'exp1': the worst case cannot be checked against its budget of $1.00; "
                             "no price or runtime for: alicloud instance ecs.gn7i-c8g1.2xlarge in me-east-1")


def test_headroom_and_accepted_unpriced_types_come_from_config():
    # g5.xlarge for 8 h stays under a 1000 USD budget, but not under a 0.1% slice of it.
    result = analyze(*_aws(aws_gpu(tags=tags(budget="1000"))), config={"budget-worst-case": {"headroomPercent": 99.9}})
    (hit,) = found(result, "budget-worst-case")
    assert f"exceeds budgetUsd $1,000.00 (the {v.TAG_BUDGET_USD} tag) less 99.9% headroom" in hit[3]
    unpriced = [res(ALI_INSTANCE, "gpu", ali_gpu(tags=tags(checkpoint="oss://ali-ckpt/exp1/"))),
                *ali_checkpoint_bucket()]
    config = {"budget-unpriced": {"acceptUnpriced": ["ecs.gn7i-c8g1.2xlarge"]}}
    assert found(analyze(*unpriced, region="me-east-1", config=config), "budget-unpriced") == []


def test_aws_provider_default_tags_count():
    """Tags set once on the provider (``default_tags``) reach every resource, as AWS applies them."""
    sg = res("aws:ec2/securityGroup:SecurityGroup", "sg", {"description": "x", "tags": {"team": "nlp"}})
    defaults = {v.TAG_OWNER: "alice@example.com", v.TAG_PROJECT: "llm", v.TAG_EXPERIMENT: "exp1",
                v.TAG_COST_CENTER: "ml", v.TAG_BUDGET_USD: "40", v.TAG_EXPIRES_AT: "2026-12-01T16:00:00Z",
                v.TAG_MAX_RUNTIME_HOURS: "8", v.TAG_CHECKPOINT_URI: "none", v.TAG_MANAGED_BY: "gpulease"}
    rendering = stack(sg)
    rendering.config["aws:defaultTags"] = {"tags": defaults}
    assert found(PolicyRunner().analyze(rendering, now=NOW), "budget-tags") == []
    rendering.config["aws:defaultTags"] = {"tags": {k: val for k, val in defaults.items() if k != v.TAG_OWNER}}
    assert found(PolicyRunner().analyze(rendering, now=NOW), "budget-tags") == [
        ("budget-tags", "mandatory", "sg", f"SecurityGroup 'sg' is missing required tags: {v.TAG_OWNER}")
    ]


@pytest.mark.parametrize("budget", ["0", "0.0", "-0", "nan", "inf", "-inf", ""])
def test_a_budget_tag_that_is_not_a_positive_finite_number_fails(budget):
    # "0" is no budget at all, and "nan" / "inf" parse as floats that slip past every comparison.
    (hit,) = found(analyze(*_aws(aws_gpu(tags=tags(budget=budget)))), "budget-tags")
    assert hit[:3] == ("budget-tags", "mandatory", "gpu")
    assert f"{v.TAG_BUDGET_USD}={budget!r} is not a positive number of USD" in hit[3]


def test_the_budget_verdict_names_budget_usd_and_what_fits():
    def runs(budget_a: str, budget_b: str) -> list:
        out = []
        for name, budget in (("a", budget_a), ("b", budget_b)):
            out += [res(AWS_INSTANCE, name, aws_gpu(tags=tags(budget=budget, experiment=name))),
                    aws_schedule_for(name)]
        return [*out, *checkpoint_bucket()]

    # b: g5.xlarge at the on-demand cap $1.017/h for 8 h = $8.14 against 5 USD: 5 / 1.017 = 4.9 h; the instance at
    # $1.006/h, the rest $0.088 over 8 h: (5 - 0.088) / 8 h = $0.614/h for the instance, so that it fits once set.
    (hit,) = found(analyze(*runs("12", "5")), "budget-worst-case")
    assert ("exceeds its budgetUsd $5.00 (the gpulease:budget-usd tag); budgetUsd 5 covers 4.91 h at $1.017/h (disks, "
            "addresses and buckets $0.09); accepted: maxRuntimeHours 4.91 or less, an instance type or a spot cap "
            "(maxSpotPriceUsd) at most $0.614/h for the "
            "8 h, or budgetUsd 8.14 or more (prices used in us-east-1: ") in hit[3]
    # One budget shared by the stack: the same ways out for the stack as a whole.
    # Both runs at $2.037/h together: 12 / 2.037 = 5.89 h each; each instance: (12 - $0.20 of the rest) / 16 instance
    # hours = $0.737/h (not 12 / 8 h = $1.500/h, which set on each instance would still cost $24.20); $16.30 needed.
    (hit,) = found(analyze(*runs("12", "12")), "budget-worst-case")
    assert ("; budgetUsd 12 covers 5.89 h at $2.037/h (disks, addresses and buckets $0.20); accepted: "
            "maxRuntimeHours 5.89 or less") in hit[3]
    assert "at most $0.737/h each (for 2 instances) for the 8 h, or budgetUsd 16.3 or more" in hit[3]
