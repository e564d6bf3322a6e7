"""Every refusal of the spec reads the same way: the stack's file, the field path, what was wrong and what is
accepted; a near miss (a misspelt field, a region, a choice) gets the likely intended one. Pydantic's own wording
and raw parser messages never reach the user."""

from __future__ import annotations

import re

import pytest

from components.spec.load import SpecError, load_stack_spec
from tests.components.spec import test_limits, test_plan_time_refusals, test_run_sections, test_spec
from tests.support.specs import experiment

EXP = "gpulease:experiment"
SOURCE = "stacks/Pulumi.dev.yaml"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA+hBi33bSLRNsgbKP5NSFs+fQAUzBEl3aSwo5F2Lh5+ alice@laptop"
INTERNAL = re.compile(r"Input should|instance of|[A-Z][a-z]+Spec\b|Invalid IPv6 URL|input is too short|"
                      r"Port could not be cast|Port out of range|Value error|validation error|type=")

MESSAGES: list[tuple[str, dict, dict]] = [
    ("key too short", experiment(ssh={"allowedCidrs": ["203.0.113.7/32"], "publicKey": "ssh-ed25519 AAAA"}), {}),
    ("a source as text", experiment(data={"sources": ["s3://b/x"]}), {}),
    ("data as a list", experiment(data=[1]), {}),
    ("gpu as text", experiment(gpu="A100"), {}),
    ("ssh null", experiment(ssh=None), {}),
    ("tags as a list", experiment(tags=["a"]), {}),
    ("a tag as a number", experiment(tags={"a": 1}), {}),
    ("expiresAt not a time", experiment(expiresAt="tomorrow"), {}),
    ("misspelt fit field", experiment(gpu={"fit": {"params": "7B", "mehtod": "lora"}}), {}),
    ("misspelt method", experiment(gpu={"fit": {"params": "7B", "method": "lorra"}}), {}),
    ("misspelt cloud", experiment(cloud="alicould"), {}),
    ("nodes 2.5", experiment(nodes=2.5), {}),
    ("bad scheme", experiment(data={"sources": [{"uri": "ftp://x/y", "to": "/data/x"}]}), {}),
    ("bad hub repo", experiment(data={"sources": [{"uri": "hf://a", "to": "/data/x"}]}), {}),
    ("bad IPv6 URL", experiment(data={"sources": [{"uri": "https://[::1/f", "to": "/data/x"}]}), {}),
    ("bad bucket key", experiment(data={"sources": [{"uri": "s3://bucket-a/a%20b", "to": "/data/x"}]}), {}),
    ("verify without bound", experiment(verify={"command": "x"}), {}),
    ("a region typo", experiment(), {"aws:region": "us-west2"}),
    ("a region number", experiment(), {"aws:region": 123}),
    ("an Alibaba region typo", experiment(cloud="alicloud", gpu={"instanceType": "ecs.gn7i-c8g1.2xlarge"}),
     {"alicloud:region": "cn-hangzou"}),
    ("a region of the other cloud", experiment(), {"aws:region": "cn-hangzhou"}),
    ("a region field typo", experiment(region="eu-west1"), {}),
    ("an Alibaba disk on aws", experiment(dataDisk={"type": "cloud_essd"}), {}),
    ("an Alibaba storage class on aws", experiment(checkpoints={"lifecycle": {"transitions": [
        {"days": 3, "storageClass": "IA"}]}}), {}),
    ("an Alibaba image family on aws", experiment(image={"family": "ubuntu-22.04-gpu"}), {}),
    ("image id and family", experiment(image={"id": "ami-0123456789abcdef0", "family": "ubuntu-22.04"}), {}),
    ("a tag key", experiment(tags={"a\u00e9!": "x"}), {}),
    ("snake_case field", experiment(idle_minutes=30), {}),
    ("the key namespace misspelt", experiment(), {"gpulease:experimnt": {}}),
    ("a threshold as text", experiment(budgetAlerts={"thresholds": ["80"]}), {}),
]


def _refusal(spec: dict, config: dict) -> SpecError:
    with pytest.raises(SpecError) as err:
        load_stack_spec("dev", {EXP: spec, **config}, source=SOURCE)
    return err.value


def _corpus() -> list[tuple[str, dict, dict]]:
    cases = list(MESSAGES)
    cases += [(f"spec: {c[0]}", c[1], {}) for c in test_spec.INVALID]
    cases += [(f"limits: {c[0]}", c[1], {}) for c in test_limits.REFUSED]
    cases += [(f"run: {c[0]}", experiment(**c[1]), {}) for c in test_run_sections.INVALID]
    cases += [(f"plan: {c[0]}", experiment(**c[1]), c[2]) for c in test_plan_time_refusals.REFUSED]
    return cases


CORPUS = _corpus()


@pytest.mark.parametrize(("case", "spec", "config"), CORPUS, ids=[c[0] for c in CORPUS])
def test_every_refusal_names_file_field_what_was_wrong_and_what_is_accepted(case, spec, config) -> None:
    err = _refusal(spec, config)
    lines = str(err).splitlines()
    assert lines[0] == f"invalid gpulease config in stack 'dev' ({SOURCE}):"
    assert lines[-1].startswith("Nothing was created.")
    for line in lines[1:-1]:
        match = re.match(r"^  - ((gpulease|aws|alicloud):[A-Za-z0-9_.\[\]:-]+): (.+)$", line)
        assert match, line
        assert "accepted" in match.group(3), line
        assert not INTERNAL.search(match.group(3)), line


def _only_line(spec: dict, config: dict | None = None) -> str:
    (line,) = str(_refusal(spec, config or {})).splitlines()[1:-1]
    return line


def test_a_misspelt_required_field_is_one_did_you_mean_line() -> None:
    spec = experiment()
    spec["maxRuntimHours"] = spec.pop("maxRuntimeHours")
    line = _only_line(spec)
    assert line.startswith(f"  - {EXP}.maxRuntimHours: unknown field; did you mean maxRuntimeHours?")
    assert "accepted fields here" not in line


def test_a_misspelt_optional_field_is_one_did_you_mean_line() -> None:
    line = _only_line(experiment(gpu={"fit": {"params": "8B", "mehtod": "lora"}}))
    assert line.startswith(f"  - {EXP}.gpu.fit.mehtod: unknown field; did you mean method?")


def test_snake_case_is_named_as_the_camel_case_field() -> None:
    line = _only_line(experiment(idle_minutes=30))
    assert "did you mean idleMinutes? (fields are camelCase)" in line


def test_an_unknown_region_is_named_with_the_nearest_one() -> None:
    line = _only_line(experiment(), {"aws:region": "us-west2"})
    assert line.startswith("  - aws:region: 'us-west2' is not an AWS region (did you mean us-west-2?)")
    line = _only_line(experiment(cloud="alicloud", gpu={"instanceType": "ecs.gn7i-c8g1.2xlarge"}),
                      {"alicloud:region": "cn-hangzou"})
    assert "'cn-hangzou' is not an Alibaba Cloud region (did you mean cn-hangzhou?)" in line


def test_a_number_for_a_region_gives_no_override_file_advice() -> None:
    line = _only_line(experiment(), {"aws:region": 123})
    assert "123 is a number; accepted: an AWS region name" in line and "override" not in line


def test_alibaba_settings_without_cloud_say_that_cloud_defaults_to_aws() -> None:
    line = _only_line(experiment(dataDisk={"type": "cloud_essd"}))
    assert line == (f"  - {EXP}.dataDisk.type: 'cloud_essd' is an Alibaba Cloud disk type, and this stack's cloud is "
                    "aws (cloud defaults to aws); accepted: cloud: alicloud to use it, or on aws: gp3, gp2, io1, io2, "
                    "st1")
    assert "cloud defaults to aws" in _only_line(experiment(), {"aws:region": "cn-hangzhou"})


def test_a_tiny_runtime_is_reported_against_max_runtime_hours_not_verify() -> None:
    line = _only_line(experiment(maxRuntimeHours=0.01, verify={"command": "x", "maxMinutes": 5}))
    assert line.startswith(f"  - {EXP}.maxRuntimeHours: 0.01 h is too short")


def test_a_problem_found_after_loading_names_the_file_too() -> None:
    assert str(SpecError("dev", [("gpulease:experiment.gpu", "x; accepted: y")])).startswith(
        "invalid gpulease config in stack 'dev' (stacks/Pulumi.dev.yaml):")
