"""The ephemeral stack's config and name: copied from the base, overridden, capped, tagged, validated first."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from components.spec.load import SpecError
from gpulease.core import resources as rt
from gpulease.core import vocabulary as v
from gpulease.core.errors import UserError
from gpulease.ephemeral import naming
from gpulease.ephemeral.backend import config_json
from gpulease.ephemeral.config import EXPERIMENT, build_config, parse_override
from gpulease.review.render import render
from policies.guardrails.taggable import is_taggable
from tests.support.clock import FIXED_NOW
from tests.support.ephemeral import make_project
from tests.support.specs import experiment

STACK = "ci-77-deadbee"
RUN = "octo/repo/actions/runs/77"


def build(project: Path, **kw):
    return build_config("base", STACK, ci_run=RUN, project_dir=project, **kw)


def test_base_config_is_copied_with_overrides_and_the_ephemeral_settings(tmp_path: Path) -> None:
    project = make_project(tmp_path, experiment(tags={"team": "nlp"}), extra={"aws:skipMetadataApiCheck": False})
    cfg = build(
        project,
        overrides=["gpu.instanceType=g6.xlarge", "dataDisk.sizeGb=150", "idleMinutes=10", "aws:region=us-west-2"],
    )
    exp = cfg.config[EXPERIMENT]
    assert cfg.config["aws:region"] == "us-west-2" and cfg.config["aws:skipMetadataApiCheck"] is False
    assert exp["gpu"] == {"instanceType": "g6.xlarge"}
    assert exp["dataDisk"] == {"sizeGb": 150, "retain": False}
    assert exp["checkpoints"] == {"prefix": "ckpt/", "intervalMinutes": 15, "retain": False}
    assert exp["idleMinutes"] == 10 and exp["tags"] == {"team": "nlp"} and exp["ciRun"] == RUN
    assert exp["maxRuntimeHours"] == 2.0  # the base's 8 hours, capped
    spec = cfg.experiment
    assert (spec.gpu.instance_type, spec.data_disk.retain, spec.checkpoints.retain, spec.ci_run) == ("g6.xlarge", False, False, RUN)
    assert cfg.region == "us-west-2"
    # The base stack file itself is untouched.
    base = yaml.safe_load((project / "stacks" / "Pulumi.base.yaml").read_text())["config"][EXPERIMENT]
    assert base["maxRuntimeHours"] == 8 and "ciRun" not in base


@pytest.mark.parametrize(("base_hours", "override", "cap", "expected"), [(8, None, 2.0, 2.0), (8, "maxRuntimeHours=0.5", 2.0, 0.5),
                                                                         (8, "maxRuntimeHours=6", 4.0, 4.0), (1, None, 3.0, 1.0)])
def test_the_deadline_is_capped_never_raised(tmp_path: Path, base_hours, override, cap, expected) -> None:
    project = make_project(tmp_path, experiment(maxRuntimeHours=base_hours))
    cfg = build(project, overrides=[override] if override else [], max_hours=cap)
    assert cfg.experiment.max_runtime_hours == expected


def test_an_explicit_deadline_in_the_base_gives_way_to_the_cap(tmp_path: Path) -> None:
    far = v.rfc3339(datetime.now(UTC) + timedelta(hours=6))
    project = make_project(tmp_path, experiment(expiresAt=far, deadlineRenewal=3))
    cfg = build(project)
    assert "expiresAt" not in cfg.config[EXPERIMENT] and cfg.experiment.expires_at is None
    assert cfg.experiment.deadline_renewal == 0


def test_keep_data_keeps_the_base_retention(tmp_path: Path) -> None:
    cfg = build(make_project(tmp_path), keep_data=True)
    assert cfg.experiment.data_disk.retain is True and cfg.experiment.checkpoints.retain is True


def test_every_resource_is_tagged_with_the_ci_run_and_the_capped_deadline(tmp_path: Path) -> None:
    cfg = build(make_project(tmp_path))
    rendering = render(cfg.config, stack=STACK, now=FIXED_NOW)
    assert rendering.error is None, rendering.error
    deadline = v.rfc3339(FIXED_NOW + timedelta(hours=2))
    taggable = [r for r in rendering.custom_resources if is_taggable(r.type)]
    assert {r.type for r in taggable} >= {"aws:ec2/instance:Instance", "aws:ebs/volume:Volume", "aws:s3/bucket:Bucket"}
    for resource in taggable:
        tags = resource.inputs.get("tags") or {}
        assert tags.get(v.TAG_CI_RUN) == RUN, f"{resource.type} {resource.name} lacks the ci-run tag"
        assert tags.get(v.TAG_EXPIRES_AT) == deadline
        # An S3 object takes at most ten tags: the kit's objects leave the runtime tag to the rest.
        assert tags.get(v.TAG_MAX_RUNTIME_HOURS) == "2" or resource.type in rt.BUCKET_OBJECT_TYPES
    assert rendering.outputs["deadline"] == deadline
    volume = rendering.one("aws:ebs/volume:Volume")
    bucket = rendering.one("aws:s3/bucket:Bucket")
    assert volume.retain_on_delete is False and volume.inputs["tags"][v.TAG_RETAIN] == "false"
    assert bucket.retain_on_delete is False and bucket.inputs["tags"][v.TAG_RETAIN] == "false"


def test_an_invalid_base_stack_is_reported_against_its_own_file(tmp_path: Path) -> None:
    project = make_project(tmp_path, experiment(maxRuntimeHours=500))
    with pytest.raises(SpecError) as err:
        build(project)
    assert err.value.stack == "base" and err.value.source.endswith("Pulumi.base.yaml")
    assert [p for p, _ in err.value.problems] == [f"{EXPERIMENT}.maxRuntimeHours"]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("gpu.bogus=1", "gpulease:experiment.gpu.bogus: unknown field"),
        ("maxRuntimeHours=soon", "gpulease:experiment.maxRuntimeHours: \"soon\" is text; accepted: a number"),
        ("owner.name=x", "owner is not a mapping"),
        ("noequals", "accepted: key=value"),
        ("gpu..x=1", "is not a field name"),
        ("gpulease:experiment=x", "without the namespace"),
    ],
)
def test_bad_overrides_name_the_field_and_create_nothing(tmp_path: Path, override: str, message: str) -> None:
    with pytest.raises(UserError) as err:
        build(make_project(tmp_path), overrides=[override])
    assert message in str(err.value)


def test_override_values_are_typed_like_yaml() -> None:
    assert parse_override("ssh.allowedCidrs=[198.51.100.0/24]") == ([EXPERIMENT, "ssh", "allowedCidrs"], ["198.51.100.0/24"])
    assert parse_override("checkpoints.enabled=false") == ([EXPERIMENT, "checkpoints", "enabled"], False)
    assert parse_override("budgetUsd=12.5") == ([EXPERIMENT, "budgetUsd"], 12.5)


def test_sweeps_and_stacks_without_a_bucket_are_refused(tmp_path: Path) -> None:
    project = make_project(tmp_path / "a", experiment(market="on-demand", onDemandReason="debugging a hang - needs a stable box",
                                                      checkpoints={"enabled": False}))
    with pytest.raises(UserError, match=r"checkpoints\.enabled is false"):
        build(project)
    sweep_project = make_project(tmp_path / "b")
    path = sweep_project / "stacks" / "Pulumi.base.yaml"
    path.write_text(yaml.safe_dump({"config": {"aws:region": "us-east-1", "gpulease:sweep": {
        "base": experiment(), "runs": [{"name": "a"}]}}}))
    with pytest.raises(UserError, match="declares a sweep"):
        build(sweep_project)


def test_unknown_base_stack_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="known stacks: base"):
        build_config("nope", STACK, ci_run=RUN, project_dir=make_project(tmp_path))


def test_config_json_keeps_structure_and_refuses_foreign_secrets() -> None:
    doc = json.loads(config_json({"aws:region": "us-east-1", EXPERIMENT: {"name": "x", "gpu": {"count": 1}}, "a:b": True}))
    assert doc["aws:region"] == {"value": "us-east-1", "secret": False}
    assert doc[EXPERIMENT]["objectValue"] == {"name": "x", "gpu": {"count": 1}}
    assert json.loads(doc[EXPERIMENT]["value"]) == {"name": "x", "gpu": {"count": 1}}
    assert doc["a:b"]["value"] == "true"
    with pytest.raises(UserError, match="encrypted for another stack"):
        config_json({"aws:secretKey": {"secure": "v1:abc"}})


# -- names ---------------------------------------------------------------------------------------------------


def test_names_come_from_the_github_run() -> None:
    env = {"GITHUB_RUN_ID": "123456", "GITHUB_RUN_ATTEMPT": "1", "GITHUB_SHA": "ABCDEF0123456789"}
    assert naming.ephemeral_stack_name(env) == "ci-123456-abcdef0"
    assert naming.ephemeral_stack_name({**env, "GITHUB_RUN_ATTEMPT": "2"}) == "ci-123456-2-abcdef0"
    assert naming.current_run_stack_name(env) == "ci-123456-abcdef0"
    assert naming.ci_run_label({**env, "GITHUB_REPOSITORY": "octo/repo"}, "x") == "octo/repo/actions/runs/123456"


def test_names_outside_ci_are_generated_unique_and_valid() -> None:
    names = {naming.ephemeral_stack_name({}, sha=lambda: "1234567abc") for _ in range(50)}
    assert len(names) == 50
    for name in names:
        assert naming.STACK_NAME.match(name) and name.startswith("ci-") and name.endswith("-1234567")
    assert naming.ephemeral_stack_name({}, sha=lambda: None, now=lambda: FIXED_NOW, token=lambda: "beef") == (
        "ci-20261201080000beef-nosha"
    )
    with pytest.raises(UserError, match="GITHUB_RUN_ID"):
        naming.current_run_stack_name({})


@pytest.mark.parametrize(("raw", "expected"), [("1:00", "1:00"), ("yes", "yes"), ("0o10", 8), ("2", 2)])
def test_set_values_are_read_as_the_pulumi_cli_reads_a_stack_file(raw, expected):
    """YAML 1.2 as in a stack file: `--set maxRuntimeHours=1:00` is the text 1:00 (refused by the spec), never 60."""
    from gpulease.ephemeral.config import parse_override

    assert parse_override(f"maxRuntimeHours={raw}")[1] == expected
