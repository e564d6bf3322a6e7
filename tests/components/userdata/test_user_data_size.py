"""Every user-data the kit renders stays at least a quarter under its cloud's documented limit (AWS 16 KB,
Alibaba Cloud 32 KB, before base64): every example stack, a CI stack with the job agent, each sweep run, and the
largest hooks and markers the schema accepts. Past the margin, plan says which stack and which fields, and
registers nothing."""

from __future__ import annotations

import base64
import gzip
import random
import string
from pathlib import Path

import pytest

from components import userdata
from components.spec.experiment import ExperimentSpec
from components.spec.sections import HOOK_MAX_LENGTH, PATH_MAX_LENGTH
from gpulease.review.render import render_stack_file
from tests.support.alicloud import ali_experiment, render_ali
from tests.support.clock import FIXED_NOW
from tests.support.paths import STACKS_DIR
from tests.support.specs import experiment, render_experiment

LIMITS = {"aws": 16 * 1024, "alicloud": 32 * 1024}
BUDGET = {cloud: int(limit * 0.75) for cloud, limit in LIMITS.items()}


def raw_user_data(resource) -> tuple[str, bytes]:
    inputs = resource.inputs
    if "userDataBase64" in inputs:
        return "aws", base64.b64decode(inputs["userDataBase64"])
    return "alicloud", base64.b64decode(inputs["userData"])


def instances(r) -> list:
    return [x for x in r.resources if x.type in ("aws:ec2/instance:Instance", "alicloud:ecs/instance:Instance")]


@pytest.mark.parametrize("path", sorted(STACKS_DIR.glob("Pulumi.*.yaml")), ids=lambda p: p.stem.removeprefix("Pulumi."))
def test_every_example_stack_keeps_a_quarter_of_the_limit_free(path: Path) -> None:
    r = render_stack_file(path, now=FIXED_NOW)
    assert r.error is None, r.error
    found = instances(r)
    assert found
    for instance in found:
        cloud, raw = raw_user_data(instance)
        assert len(raw) <= BUDGET[cloud], f"{path.name} {instance.name}: {len(raw)} bytes > {BUDGET[cloud]}"


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_a_ci_stack_with_the_job_agent_keeps_a_quarter_free(cloud: str) -> None:
    ci = {"ciRun": "octo/repo/actions/runs/1234567890"}
    r = render_experiment(experiment(**ci)) if cloud == "aws" else render_ali(ali_experiment(**ci))
    assert r.error is None, r.error
    (instance,) = instances(r)
    got, raw = raw_user_data(instance)
    assert got == cloud and len(raw) <= BUDGET[cloud]
    assert userdata.JOB_AGENT_UNIT.encode() in gzip.decompress(raw)


def _noise(length: int, seed: int) -> str:
    """Text gzip cannot shrink: the worst case for the size of user-data."""
    rng = random.Random(seed)
    return "".join(rng.choice(string.ascii_letters + string.digits + " -_./") for _ in range(length))


def _largest_spec(cloud: str, overrides: dict) -> ExperimentSpec:
    """The spec with the longest checkpoint prefix the schema accepts for ``cloud`` (the prefix ends up in a tag,
    whose length each cloud caps), found by bisection over the prefix length."""
    def build(length: int) -> dict:
        prefix = _noise(length, 3).replace(" ", "-").replace(".", "-") + "/"
        return experiment(**{**overrides, "checkpoints": {**overrides["checkpoints"], "prefix": prefix}}, cloud=cloud)

    low, high = 1, 1024
    assert ExperimentSpec.model_validate(build(low))
    while low < high:
        mid = (low + high + 1) // 2
        try:
            ExperimentSpec.model_validate(build(mid))
            low = mid
        except ValueError:
            high = mid - 1
    return ExperimentSpec.model_validate(build(low))


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_the_largest_hooks_and_markers_the_schema_accepts_still_fit(cloud: str) -> None:
    overrides = {
        "ciRun": "octo/repo/actions/runs/1234567890",
        "watchdog": {"warnHook": _noise(HOOK_MAX_LENGTH, 1), "busyMarker": "/" + _noise(PATH_MAX_LENGTH - 1, 2).replace("\n", "")},
        "checkpoints": {"hook": _noise(HOOK_MAX_LENGTH, 4), "signal": "USR1", "process": _noise(HOOK_MAX_LENGTH, 5)},
        "name": "e" * 40,
        "project": "p" * 64,
    }
    if cloud == "alicloud":
        overrides["gpu"] = {"instanceType": "ecs.gn7i-c8g1.2xlarge"}
    spec = _largest_spec(cloud, overrides)
    settings = userdata.settings_for(
        spec, cloud=cloud, region="ap-southeast-1", stack="s" * 100,
        checkpoint_uri=f"{'s3' if cloud == 'aws' else 'oss'}://{'b' * 63}/{spec.checkpoints.prefix}",
        data_disk_id="vol-00000000000000000" if cloud == "aws" else "d-0000000000000000000x",
        tools_bucket="b" * 63, tools_prefix=spec.checkpoints.prefix, nvidia_driver="absent",
    )
    raw = userdata.pack_user_data(settings)
    assert len(raw) <= BUDGET[cloud], f"{cloud}: {len(raw)} bytes > {BUDGET[cloud]}"


def test_a_hook_longer_than_the_schema_allows_is_refused_with_its_field() -> None:
    r = render_experiment(experiment(watchdog={"warnHook": "x" * (HOOK_MAX_LENGTH + 1)}))
    assert r.error and "gpulease:experiment.watchdog.warnHook" in r.error and f"{HOOK_MAX_LENGTH}" in r.error
    assert instances(r) == []


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_user_data_past_the_margin_is_one_clear_error_and_nothing_is_created(cloud: str, monkeypatch) -> None:
    monkeypatch.setitem(userdata.USER_DATA_LIMITS, cloud, 4000)
    spec = experiment(watchdog={"warnHook": _noise(HOOK_MAX_LENGTH, 6)})
    r = render_experiment(spec) if cloud == "aws" else render_ali(ali_experiment(watchdog=spec["watchdog"]))
    assert r.error is not None
    assert "stack 'test', experiment 'exp1': the instance's user-data would be" in r.error
    assert "shorten watchdog.warnHook, checkpoints.hook or checkpoints.process" in r.error
    assert "<Output" not in r.error and "Traceback" not in r.error and "ValueError" not in r.error
    assert [x for x in r.resources if x.custom and not x.type.startswith("pulumi:providers:")] == []
