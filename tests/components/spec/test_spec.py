"""The spec accepts what the README documents and rejects mistakes with a message naming the field."""

from __future__ import annotations

from datetime import timedelta

import pytest

from components.spec.load import SpecError, load_stack_spec
from tests.support.clock import FIXED_NOW
from tests.support.specs import experiment

EXP = "gpulease:experiment"


def load(spec: dict, stack: str = "dev"):
    return load_stack_spec(stack, {EXP: spec})


def test_defaults_are_the_safe_ones() -> None:
    exp = load(experiment()).base
    assert exp.market == "spot"
    assert exp.data_disk.retain is True and exp.checkpoints.retain is True
    assert exp.disk_type == "gp3" and exp.data_disk.size_gb == 100
    assert exp.idle_minutes == 30
    assert exp.image_family == "dlami-base-ubuntu22"
    assert exp.checkpoints.lifecycle.keep_days == 30
    assert exp.ssh.allowed_cidrs == ["203.0.113.7/32", "2001:db8:1234::/48"]


def test_alicloud_defaults() -> None:
    spec = experiment(cloud="alicloud", gpu={"instanceType": "ecs.gn7i-c8g1.2xlarge"})
    exp = load(spec).base
    assert exp.disk_type == "cloud_essd" and exp.image_family == "ubuntu-22.04"


INVALID: list[tuple[str, dict, str, str]] = [
    # (case, spec, field path in the message, a word of what is accepted / wrong)
    ("name not dns", experiment(name="My_Exp"), f"{EXP}.name", "DNS-safe"),
    ("name too long", experiment(name="a" * 50), f"{EXP}.name", "DNS-safe"),
    ("owner not email", experiment(owner="alice"), f"{EXP}.owner", "email"),
    ("owner missing", {k: v for k, v in experiment().items() if k != "owner"}, f"{EXP}.owner", "required"),
    ("budget zero", experiment(budgetUsd=0), f"{EXP}.budgetUsd", "greater than 0"),
    ("budget text", experiment(budgetUsd="lots"), f"{EXP}.budgetUsd", "number"),
    ("unknown field", experiment(gpus=2), f"{EXP}.gpus", "did you mean gpu?"),
    ("unknown field far", experiment(colour=2), f"{EXP}.colour", "accepted fields"),
    ("cloud unknown", experiment(cloud="gcp"), f"{EXP}.cloud", "'aws' or 'alicloud'"),
    ("gpu both ways", experiment(gpu={"instanceType": "g5.xlarge", "gpuMemoryGb": 24}), f"{EXP}.gpu", "exactly one"),
    ("gpu none", experiment(gpu={}), f"{EXP}.gpu", "exactly one"),
    ("not a gpu type", experiment(gpu={"instanceType": "m5.large"}), f"{EXP}.gpu", "carries no GPU"),
    ("gpu count zero", experiment(gpu={"gpuMemoryGb": 24, "count": 0}), f"{EXP}.gpu.count", "greater than or equal to 1"),
    ("market unknown", experiment(market="reserved"), f"{EXP}.market", "'spot' or 'on-demand'"),
    ("on-demand no reason", experiment(market="on-demand"), f"{EXP}.onDemandReason", "accepted: a reason"),
    ("reason too short", experiment(market="on-demand", onDemandReason="debug"), f"{EXP}.onDemandReason", "at least 10"),
    ("reason on spot", experiment(onDemandReason="interactive debugging session"), f"{EXP}.onDemandReason", "only for market: on-demand"),
    ("spot without checkpoints", experiment(checkpoints={"enabled": False}), f"{EXP}.checkpoints.enabled", "spot"),
    ("runtime missing", {k: v for k, v in experiment().items() if k != "maxRuntimeHours"}, f"{EXP}.maxRuntimeHours", "required"),
    ("runtime over cap", experiment(maxRuntimeHours=200), f"{EXP}.maxRuntimeHours", "less than or equal to 168"),
    ("runtime zero", experiment(maxRuntimeHours=0), f"{EXP}.maxRuntimeHours", "greater than 0"),
    ("idle too short", experiment(idleMinutes=1), f"{EXP}.idleMinutes", "greater than or equal to 5"),
    ("ssh open world v4", experiment(ssh={"allowedCidrs": ["0.0.0.0/0"], "keyName": "k"}), f"{EXP}.ssh.allowedCidrs", "whole internet"),
    ("ssh open world v6", experiment(ssh={"allowedCidrs": ["::/0"], "keyName": "k"}), f"{EXP}.ssh.allowedCidrs", "whole internet"),
    ("ssh prefix too short", experiment(ssh={"allowedCidrs": ["10.0.0.0/8"], "keyName": "k"}), f"{EXP}.ssh.allowedCidrs", "/16 or longer"),
    ("ssh bad cidr", experiment(ssh={"allowedCidrs": ["203.0.113.300/32"], "keyName": "k"}), f"{EXP}.ssh.allowedCidrs", "not a valid CIDR"),
    ("ssh host bits", experiment(ssh={"allowedCidrs": ["203.0.113.7/24"], "keyName": "k"}), f"{EXP}.ssh.allowedCidrs", "not a valid CIDR"),
    ("ssh empty", experiment(ssh={"allowedCidrs": [], "keyName": "k"}), f"{EXP}.ssh", "needs allowedCidrs"),
    ("ssh no key", experiment(ssh={"allowedCidrs": ["203.0.113.7/32"]}), f"{EXP}.ssh", "exactly one of publicKey or keyName"),
    ("ssh private key", experiment(ssh={"allowedCidrs": ["203.0.113.7/32"], "publicKey": "-----BEGIN OPENSSH PRIVATE KEY-----"}), f"{EXP}.ssh.publicKey", "public half"),
    ("ssh cidrs in ssm", experiment(ssh={"mode": "ssm", "allowedCidrs": ["203.0.113.7/32"]}), f"{EXP}.ssh", "no allowedCidrs"),
    ("ssm on alicloud", experiment(cloud="alicloud", gpu={"instanceType": "ecs.gn7i-c8g1.2xlarge"}, ssh={"mode": "ssm"}), f"{EXP}.ssh.mode", "cloud-assistant"),
    ("disk type other cloud", experiment(dataDisk={"type": "cloud_essd"}), f"{EXP}.dataDisk.type", "gp3"),
    ("disk too small", experiment(dataDisk={"sizeGb": 1}), f"{EXP}.dataDisk.sizeGb", "greater than or equal to 10"),
    ("throughput on gp2", experiment(dataDisk={"type": "gp2", "throughput": 250}), f"{EXP}.dataDisk.throughput", "gp3 only"),
    ("bad volume id", experiment(dataDisk={"existingVolumeId": "disk-1"}), f"{EXP}.dataDisk.existingVolumeId", "vol-"),
    ("bucket name", experiment(checkpoints={"bucket": "My_Bucket"}), f"{EXP}.checkpoints.bucket", "lowercase"),
    ("prefix leading slash", experiment(checkpoints={"prefix": "/ckpt"}), f"{EXP}.checkpoints.prefix", "no leading slash"),
    ("transition after expiry", experiment(checkpoints={"lifecycle": {"keepDays": 5, "transitions": [{"days": 10, "storageClass": "GLACIER"}]}}), f"{EXP}.checkpoints.lifecycle", "earlier than the expiry"),
    ("storage class", experiment(checkpoints={"lifecycle": {"transitions": [{"days": 3, "storageClass": "IA"}]}}), f"{EXP}.checkpoints.lifecycle.transitions[0].storageClass", "STANDARD_IA"),
    ("ami id", experiment(image={"id": "image-1"}), f"{EXP}.image.id", "ami-"),
    ("image family", experiment(image={"family": "windows"}), f"{EXP}.image.family", "dlami-base-ubuntu22"),
    ("image both", experiment(image={"id": "ami-0123456789abcdef0", "family": "ubuntu-22.04"}), f"{EXP}.image", "not both"),
    ("reserved tag", experiment(tags={"gpulease:owner": "x"}), f"{EXP}.tags", "reserved prefix"),
    ("tag value chars", experiment(tags={"team": "nlp,cv"}), f"{EXP}.tags", "letters, digits"),
    ("naive expiresAt", experiment(expiresAt="2026-12-01T12:00:00"), f"{EXP}.expiresAt", "UTC offset"),
    ("expiresAt past", experiment(expiresAt="2020-01-01T00:00:00Z"), f"{EXP}.expiresAt", "minutes away"),
    ("expiresAt beyond runtime", experiment(expiresAt="2030-01-01T00:00:00Z"), f"{EXP}.expiresAt", "maxRuntimeHours"),
    ("alicloud release too soon", experiment(cloud="alicloud", gpu={"instanceType": "ecs.gn7i-c8g1.2xlarge"}, ssh={"mode": "cloud-assistant"}, maxRuntimeHours=0.25), f"{EXP}.maxRuntimeHours", "30 minutes"),
]


@pytest.mark.parametrize(("case", "spec", "path", "accepted"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_configs_name_stack_field_and_what_is_accepted(case: str, spec: dict, path: str, accepted: str, monkeypatch) -> None:
    monkeypatch.setattr("gpulease.core.clock.utcnow", lambda: FIXED_NOW)
    with pytest.raises(SpecError) as info:
        load(spec, stack="my-stack")
    message = str(info.value)
    assert "stack 'my-stack'" in message
    assert f"  - {path}" in message, message
    assert accepted in message, message
    assert "Traceback" not in message


def test_invalid_config_count_is_at_least_thirty() -> None:
    assert len(INVALID) >= 30


def test_several_problems_are_reported_together() -> None:
    with pytest.raises(SpecError) as info:
        load(experiment(owner="nobody", budgetUsd=-5, market="on-demand"))
    paths = [p for p, _ in info.value.problems]
    assert f"{EXP}.owner" in paths and f"{EXP}.budgetUsd" in paths


def test_alicloud_deadline_under_thirty_minutes_is_refused(monkeypatch) -> None:
    monkeypatch.setattr("gpulease.core.clock.utcnow", lambda: FIXED_NOW)
    soon = (FIXED_NOW + timedelta(minutes=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
    spec = experiment(cloud="alicloud", gpu={"instanceType": "ecs.gn7i-c8g1.2xlarge"}, ssh={"mode": "cloud-assistant"}, expiresAt=soon)
    with pytest.raises(SpecError, match=r"expiresAt: .* less than 30 minutes away"):
        load(spec)
    ok = (FIXED_NOW + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert load({**spec, "expiresAt": ok}).base.expires_at == FIXED_NOW + timedelta(hours=2)


def test_exactly_one_of_experiment_or_sweep() -> None:
    with pytest.raises(SpecError, match="declare exactly one"):
        load_stack_spec("s", {})
    with pytest.raises(SpecError, match="declare exactly one"):
        load_stack_spec("s", {EXP: experiment(), "gpulease:sweep": {"base": experiment(), "runs": [{"name": "a"}]}})
    with pytest.raises(SpecError, match="gpulease:experiments: unknown key"):
        load_stack_spec("s", {EXP: experiment(), "gpulease:experiments": {}})


def test_sweep_merges_overrides_and_names_runs() -> None:
    base = experiment(name="sweep", tags={"team": "nlp"})
    spec = load_stack_spec(
        "s",
        {
            "gpulease:sweep": {
                "base": base,
                "runs": [
                    {"name": "a", "overrides": {"tags": {"lr": "1e-4"}}},
                    {"name": "b", "overrides": {"gpu": {"gpuMemoryGb": 48}, "maxRuntimeHours": 4}},
                ],
            }
        },
    )
    a, b = spec.experiments
    assert spec.kind == "sweep" and spec.sweep_name == "sweep"
    assert (a.name, b.name) == ("sweep-a", "sweep-b")
    assert a.tags == {"team": "nlp", "lr": "1e-4"}
    assert b.gpu.gpu_memory_gb == 48 and b.gpu.instance_type is None and b.max_runtime_hours == 4
    assert a.gpu.instance_type == "g5.xlarge"


@pytest.mark.parametrize(
    ("runs", "path", "msg"),
    [
        ([{"name": "a", "overrides": {"ssh": {"mode": "ssm"}}}], "gpulease:sweep.runs[0].overrides", "shared by every run"),
        ([{"name": "a", "overrides": {"budgetUsd": 5}}], "gpulease:sweep.runs[0].overrides", "shared by every run"),
        ([{"name": "a"}, {"name": "a"}], "gpulease:sweep.runs", "unique"),
        ([{"name": "A!"}], "gpulease:sweep.runs[0].name", "lowercase"),
        ([{"name": "a", "overrides": {"maxRuntimeHours": 500}}], "gpulease:sweep.runs[0].maxRuntimeHours", "168"),
        ([], "gpulease:sweep.runs", "at least 1"),
    ],
)
def test_sweep_errors_name_the_run(runs: list, path: str, msg: str) -> None:
    with pytest.raises(SpecError) as info:
        load_stack_spec("s", {"gpulease:sweep": {"base": experiment(name="sweep"), "runs": runs}})
    assert f"  - {path}" in str(info.value) and msg in str(info.value), str(info.value)
