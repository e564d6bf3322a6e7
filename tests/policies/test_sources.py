"""data-source-no-credentials and data-source-same-region through the analyzer path: the sources an instance
stages, read back from the settings in its user-data."""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

import pytest
import yaml

from gpulease.review.engine import review
from tests.support.policy import ali_gpu, analyze, aws_gpu, found, res

AWS_INSTANCE = "aws:ec2/instance:Instance"
ALI_INSTANCE = "alicloud:ecs/instance:Instance"


def user_data(settings: dict[str, Any]) -> str:
    config = {"write_files": [{"path": "/etc/gpulease/settings.json", "permissions": "0644",
                               "content": json.dumps(settings)}]}
    raw = ("#cloud-config\n" + yaml.safe_dump(config)).encode()
    return base64.b64encode(gzip.compress(raw, mtime=0)).decode()


def instance(cloud: str, sources: list[dict[str, Any]], **settings: Any):
    data = user_data({"cloud": cloud, "region": "us-east-1" if cloud == "aws" else "cn-hangzhou",
                      "data_sources": sources, **settings})
    if cloud == "aws":
        return res(AWS_INSTANCE, "gpu", {**aws_gpu(), "userDataBase64": data})
    return res(ALI_INSTANCE, "gpu", {**ali_gpu(), "userData": data})


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
@pytest.mark.parametrize(("uri", "why"), [
    ("https://alice:hunter2@files.example.com/data.tar", "user:password@"),
    ("https://bucket.s3.amazonaws.com/x.tar?X-Amz-Signature=abc&X-Amz-Credential=AKIA", "pre-signed or tokenised URL"),
    ("https://files.example.com/x.tar?token=abcdef", "pre-signed or tokenised URL"),
    ("s3://alice-datasets/AKIAIOSFODNN7EXAMPLE/data/", "access key or a hub token"),
])
def test_a_credential_in_a_source_uri_is_mandatory(cloud: str, uri: str, why: str) -> None:
    hits = found(analyze(instance(cloud, [{"uri": "hf://org/repo", "to": "/data/m"}, {"uri": uri, "to": "/data/raw"}])),
                 "data-source-no-credentials")
    (hit,) = hits
    assert hit[:3] == ("data-source-no-credentials", "mandatory", "gpu")
    assert "data source [1]" in hit[3] and why in hit[3]
    assert uri.split("://", 1)[1][:8] not in hit[3]  # the report never repeats the credential


def test_clean_sources_and_a_secret_name_pass() -> None:
    clean = instance("aws", [{"uri": "hf://meta-llama/Llama-2-7b-hf", "to": "/data/m"},
                             {"uri": "s3://alice-datasets/alpaca/", "to": "/data/raw"}],
                     hub_token_secret="gpulease/hf-token")
    assert found(analyze(clean), "data-source-no-credentials") == []


def test_a_token_pasted_as_the_secret_name_is_mandatory() -> None:
    hit = found(analyze(instance("aws", [], hub_token_secret="hf_" + "a" * 34)), "data-source-no-credentials")
    assert len(hit) == 1 and "looks like a token itself" in hit[0][3]


def test_a_bucket_in_another_region_is_advisory() -> None:
    inst = instance("aws", [{"uri": "s3://eu-data/alpaca/", "to": "/data/raw", "region": "eu-west-1"},
                            {"uri": "s3://us-data/alpaca/", "to": "/data/raw2", "region": "us-east-1"},
                            {"uri": "s3://here/alpaca/", "to": "/data/raw3"}])
    (hit,) = found(analyze(inst), "data-source-same-region")
    assert hit[:3] == ("data-source-same-region", "advisory", "gpu")
    assert "s3://eu-data/alpaca/ from eu-west-1" in hit[3] and "(us-east-1)" in hit[3]


def test_unknown_user_data_during_preview_is_skipped() -> None:
    from tests.support.policy import analyze as run

    inst = res(AWS_INSTANCE, "gpu", {**aws_gpu()})
    assert found(run(inst), "data-source-no-credentials") == [] and found(run(inst), "data-source-same-region") == []


def test_the_example_prep_stacks_pass_and_a_cross_region_source_is_flagged_in_plan() -> None:
    from gpulease.review.policy_runner import PolicyRunner
    from gpulease.review.render import load_stack_file, render
    from tests.support.clock import FIXED_NOW
    from tests.support.paths import STACKS_DIR

    reviews = review([str(STACKS_DIR / "Pulumi.aws-prep-7b.yaml"), str(STACKS_DIR / "Pulumi.ali-prep-7b.yaml")])
    for r in reviews:
        assert r.rendering.error is None, r.rendering.error
        assert not [v for v in r.policy.violations if v.policy.startswith("data-source")]
    config = load_stack_file(STACKS_DIR / "Pulumi.aws-prep-7b.yaml")
    config["gpulease:experiment"]["data"]["sources"][1]["region"] = "eu-west-1"
    rendering = render(config, stack="aws-prep-far", now=FIXED_NOW)
    assert rendering.error is None, rendering.error
    hits = [v for v in PolicyRunner().analyze(rendering, now=FIXED_NOW).violations if v.policy == "data-source-same-region"]
    assert len(hits) == 1 and "s3://alice-datasets/alpaca/ from eu-west-1" in hits[0].detail


def test_the_rules_config_adds_patterns_and_accepts_regions() -> None:
    inst = instance("aws", [{"uri": "https://files.example.org/x?ticket=ACME-1234", "to": "/data/raw"},
                            {"uri": "s3://eu-data/alpaca/", "to": "/data/raw2", "region": "eu-west-1"}])
    assert found(analyze(inst), "data-source-no-credentials") == []
    config = {"data-source-no-credentials": {"extraPatterns": ["ACME-[0-9]+"]},
              "data-source-same-region": {"acceptedRegions": ["eu-west-1"]}}
    result = analyze(inst, config=config)
    (hit,) = found(result, "data-source-no-credentials")
    assert "matches the configured pattern 'ACME-[0-9]+'" in hit[3]
    assert found(result, "data-source-same-region") == []
