"""Alibaba Cloud's stricter tag rules are enforced by the spec, naming the field, before anything is created."""

from __future__ import annotations

import pytest

from components.spec.load import SpecError, load_stack_spec
from gpulease.core import vocabulary as v
from tests.support.alicloud import ali_experiment
from tests.support.specs import experiment

EXP = "gpulease:experiment"


def load(spec: dict):
    return load_stack_spec("dev", {EXP: spec})


def test_the_shared_tag_keys_need_no_reencoding_on_alibaba_cloud() -> None:
    for key in (v.TAG_OWNER, v.TAG_ON_DEMAND_REASON, v.TAG_CHECKPOINT_URI, v.TAG_MAX_RUNTIME_HOURS, v.TAG_CI_RUN):
        assert v.alicloud_tag_problem(key, "alice@example.com") is None
    assert v.alicloud_tag_problem(v.TAG_EXPIRES_AT, "2026-12-01T16:00:00Z") is None


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("aliyun:team", "nlp", "reserve"),
        ("ACS:team", "nlp", "reserve"),
        ("acsteam", "nlp", "reserve"),
        ("https://x", "nlp", "reserve"),
        ("k" * 65, "nlp", "1-64 characters"),
        ("team", "aliyun-nlp", "reserve"),
        ("team", "acs:nlp", "reserve"),
        ("team", "x" * 129, "up to 128"),
    ],
)
def test_alibaba_tag_rules(key: str, value: str, words: str) -> None:
    problem = v.alicloud_tag_problem(key, value)
    assert problem is not None and words in problem
    with pytest.raises(SpecError) as err:
        load(ali_experiment(tags={key: value}))
    # Keys reserved on every cloud are refused by the shared check, the rest by Alibaba Cloud's, each naming the field.
    assert f"{EXP}.tags" in str(err.value) and words in str(err.value)


def test_the_same_tags_are_fine_on_aws() -> None:
    assert load(experiment(tags={"team": "aliyun-nlp", "acsteam": "x" * 200})).base.tags["team"] == "aliyun-nlp"


def test_too_many_tags_for_alibaba_cloud() -> None:
    ok = {f"k{i}": "v" for i in range(9)}  # 11 gpulease tags + 9 = 20
    assert len(load(ali_experiment(tags=ok)).base.tags) == 9
    with pytest.raises(SpecError) as err:
        load(ali_experiment(tags={**ok, "k9": "v"}))
    assert f"{EXP}.tags" in str(err.value) and "at most 9 tags here" in str(err.value)


def test_on_demand_reason_longer_than_alibaba_accepts() -> None:
    reason = "interactive debugging " + "x" * 120
    spec = ali_experiment(market="on-demand", onDemandReason=reason, checkpoints={"enabled": False})
    with pytest.raises(SpecError) as err:
        load(spec)
    assert f"{EXP}.onDemandReason" in str(err.value) and "up to 128" in str(err.value)
    on_aws = {**spec, "cloud": "aws", "gpu": {"instanceType": "g5.xlarge"}, "ssh": experiment()["ssh"]}
    assert load(on_aws).base.on_demand_reason == reason


def test_project_starting_with_a_reserved_prefix() -> None:
    with pytest.raises(SpecError) as err:
        load(ali_experiment(project="aliyun-migration"))
    assert f"{EXP}.project" in str(err.value) and "reserve" in str(err.value)


def test_noncurrent_versions_to_keep_is_refused_on_alibaba_cloud() -> None:
    spec = ali_experiment(checkpoints={"lifecycle": {"noncurrentVersionsToKeep": 2, "noncurrentDays": 3}})
    with pytest.raises(SpecError) as err:
        load(spec)
    assert f"{EXP}.checkpoints.lifecycle.noncurrentVersionsToKeep" in str(err.value) and "noncurrentDays" in str(err.value)
    assert load(ali_experiment(checkpoints={"lifecycle": {"noncurrentDays": 3}})).base.checkpoints.lifecycle.noncurrent_days == 3
