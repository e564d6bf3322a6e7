"""max-runtime and max-runtime-cloud-stop, on AWS and Alibaba Cloud resource sets."""

from __future__ import annotations

import json

from gpulease.core import vocabulary as v
from tests.support.policy import (
    ALI_INSTANCE,
    AWS_INSTANCE,
    UNKNOWN,
    ali_checkpoint_bucket,
    ali_gpu,
    analyze,
    at,
    aws_gpu,
    aws_schedule_for,
    checkpoint_bucket,
    compliant_ali_stack,
    compliant_aws_stack,
    found,
    res,
    tags,
)


def test_compliant_stacks_have_no_violation_at_all():
    # ... but the stale-price advisory: at NOW the shipped catalog's prices are older than 30 days.
    for result in (analyze(*compliant_aws_stack()), analyze(*compliant_ali_stack())):
        assert [hit[:3] for hit in found(result)] == [("budget-prices-fresh", "advisory", None)]


def test_gpu_instance_without_expires_at_is_mandatory_violation():
    result = analyze(res(AWS_INSTANCE, "gpu", aws_gpu(tags=tags(expires=None))), aws_schedule_for("gpu"),
                     *checkpoint_bucket())
    (hit,) = found(result, "max-runtime")
    assert hit[:3] == ("max-runtime", "mandatory", "gpu")
    assert hit[3].startswith(f"Instance 'gpu' (g5.xlarge) has no {v.TAG_EXPIRES_AT} tag")


def test_deadline_beyond_max_hours_names_the_latest_accepted_time():
    result = analyze(res(AWS_INSTANCE, "gpu", aws_gpu(tags=tags(expires=at(100)))), aws_schedule_for("gpu", 100),
                     *checkpoint_bucket())
    assert found(result, "max-runtime") == [
        ("max-runtime", "mandatory", "gpu",
         f"Instance 'gpu': {v.TAG_EXPIRES_AT}={at(100)} is 100 h away, more than the 72 h allowed "
         f"(latest accepted: {at(72)})")
    ]


def test_max_hours_comes_from_policy_config():
    result = analyze(*compliant_aws_stack(), config={"max-runtime": {"maxHours": 4}})
    (hit,) = found(result, "max-runtime")
    assert "more than the 4 h allowed" in hit[3]
    # ...and the enforcement level too
    result = analyze(*compliant_aws_stack(), config={"max-runtime": {"enforcementLevel": "advisory", "maxHours": 4}})
    assert [h[1] for h in found(result, "max-runtime")] == ["advisory"]


def test_non_gpu_instances_are_not_judged():
    result = analyze(res(AWS_INSTANCE, "cpu", aws_gpu(instanceType="m5.large", tags=tags(expires=None))))
    assert found(result, "max-runtime") == [] and found(result, "max-runtime-cloud-stop") == []


def test_malformed_expires_at():
    result = analyze(res(AWS_INSTANCE, "gpu", aws_gpu(tags=tags(expires="tomorrow"))), aws_schedule_for("gpu"),
                     *checkpoint_bucket())
    assert (
        "max-runtime", "mandatory", "gpu",
        f"Instance 'gpu': {v.TAG_EXPIRES_AT}='tomorrow' is not an RFC 3339 timestamp with a UTC offset",
    ) in found(result, "max-runtime")


def test_aws_gpu_instance_without_termination_schedule():
    result = analyze(res(AWS_INSTANCE, "gpu", aws_gpu()), *checkpoint_bucket())
    (hit,) = found(result, "max-runtime-cloud-stop")
    assert hit[:3] == ("max-runtime-cloud-stop", "mandatory", "gpu")
    assert "has no EventBridge Scheduler schedule terminating it" in hit[3]


def test_schedule_matched_through_the_property_dependency_when_ids_are_unknown():
    # Two instances, two schedules, ids unknown (preview): only the dependency says which covers which.
    both = [
        res(AWS_INSTANCE, "a", aws_gpu()), res(AWS_INSTANCE, "b", aws_gpu()),
        aws_schedule_for("a"), aws_schedule_for("b"), *checkpoint_bucket(),
    ]
    assert found(analyze(*both), "max-runtime-cloud-stop") == []
    only_a = [r for r in both if r.name != "b-deadline"]
    assert [h[2] for h in found(analyze(*only_a), "max-runtime-cloud-stop")] == ["b"]


def test_single_schedule_with_unknown_input_and_no_dependency_covers_the_single_instance():
    result = analyze(res(AWS_INSTANCE, "gpu", aws_gpu()), aws_schedule_for("gpu", depends=False), *checkpoint_bucket())
    assert found(result, "max-runtime-cloud-stop") == []


def test_schedule_naming_another_instance_id_does_not_cover():
    inst = res(AWS_INSTANCE, "gpu", aws_gpu(), outputs={**aws_gpu(), "id": "i-0aaa"})
    sched = aws_schedule_for("gpu", depends=False, instance_input=json.dumps({"InstanceIds": ["i-0bbb"]}))
    assert [h[2] for h in found(analyze(inst, sched, *checkpoint_bucket()), "max-runtime-cloud-stop")] == ["gpu"]
    sched = aws_schedule_for("gpu", depends=False, instance_input=json.dumps({"InstanceIds": ["i-0aaa"]}))
    assert found(analyze(inst, sched, *checkpoint_bucket()), "max-runtime-cloud-stop") == []


def test_schedule_firing_after_the_deadline():
    result = analyze(res(AWS_INSTANCE, "gpu", aws_gpu()), aws_schedule_for("gpu", fire_in_hours=9),
                     *checkpoint_bucket())
    (hit,) = found(result, "max-runtime-cloud-stop")
    assert hit[3] == (f"Instance 'gpu': no terminating schedule fires by its deadline (gpu-deadline fires at "
                      f"{at(9)}, after {v.TAG_EXPIRES_AT}={at(8)})")


def test_alibaba_instance_without_auto_release_time():
    result = analyze(res(ALI_INSTANCE, "gpu", ali_gpu(autoReleaseTime=None)), *ali_checkpoint_bucket())
    (hit,) = found(result, "max-runtime-cloud-stop")
    assert hit[:3] == ("max-runtime-cloud-stop", "mandatory", "gpu")
    assert hit[3].startswith("Instance 'gpu' has no autoReleaseTime")


def test_alibaba_auto_release_after_expires_at():
    result = analyze(res(ALI_INSTANCE, "gpu", ali_gpu(autoReleaseTime=at(10))), *ali_checkpoint_bucket())
    assert found(result, "max-runtime") == [
        ("max-runtime", "mandatory", "gpu",
         f"Instance 'gpu': autoReleaseTime={at(10)} is later than {v.TAG_EXPIRES_AT}={at(8)}")
    ]


def test_unknown_expires_at_is_not_judged_but_known_tags_are():
    result = analyze(res(AWS_INSTANCE, "gpu", aws_gpu(tags=tags(expires=UNKNOWN))), aws_schedule_for("gpu"),
                     *checkpoint_bucket())
    assert found(result, "max-runtime") == []
    assert found(result, "budget-tags") == []


def test_one_unmatched_schedule_does_not_cover_several_gpu_instances():
    # With its input unknown and no dependency, one schedule is taken for the one instance only when there is
    # exactly one: with two instances it could terminate either, so neither counts as covered.
    result = analyze(res(AWS_INSTANCE, "a", aws_gpu()), res(AWS_INSTANCE, "b", aws_gpu()),
                     aws_schedule_for("a", depends=False), *checkpoint_bucket())
    assert sorted(h[2] for h in found(result, "max-runtime-cloud-stop")) == ["a", "b"]
