"""Issue 24: the records that let a bake check readiness (ready records) and later updates skip it (baked records)
must not expire with the checkpoints. Both clouds' checkpoint lifecycle rules filter on the checkpoint prefix and
expire objects after checkpoints.lifecycle.keepDays (>= 1); the program never rewrites a baked record, so a record
under the prefix would vanish and an instance replaced later would fail its update (NotReadyError)."""

import pytest

from components.alicloud.storage import lifecycle_rules as ali_rules
from components.aws.storage import lifecycle_rules as aws_rules
from components.image_bake import (
    CONTROL_FOLDER,
    READY_FOLDER,
    baked_key,
    node_control_folder,
    ready_folder,
    record_uri,
)
from components.spec.load import SpecError, load_stack_spec
from components.userdata.tools import tools_key
from tests.components.spec.test_schema_fuzz import load_stack_file
from tests.support.paths import STACKS_DIR

STACKS = sorted(STACKS_DIR.glob("Pulumi.*.yaml"))


def _expiring_prefixes(cloud: str, spec) -> list[tuple[str, str]]:
    """(rule id, prefix) of the rules that delete or move current objects."""
    if cloud == "aws":
        return [(r["id"], r["filter"]["prefix"]) for r in aws_rules(spec.checkpoints)
                if r.get("expiration") or r.get("transitions")]
    return [(r["id"], r["prefix"]) for r in ali_rules(spec.checkpoints) if r.get("expirations") or r.get("transitions")]


@pytest.mark.parametrize("path", STACKS, ids=lambda p: p.stem)
def test_no_record_key_matches_an_expiring_lifecycle_rule(path) -> None:
    cloud = "aws" if ".aws-" in path.name else "alicloud"
    stack = path.stem.removeprefix("Pulumi.")
    for spec in load_stack_spec(stack, load_stack_file(path)).experiments:
        rules = _expiring_prefixes(cloud, spec)
        assert rules, f"{path.name}: no expiring rule found: the check below would pass vacuously"
        prefix = spec.checkpoints.prefix
        keys = [baked_key(prefix, spec, stack), f"{ready_folder(prefix)}i-0abc.json",
                tools_key(prefix),  # fetched at every boot: a restart after keepDays would find no tools
                # the instance's reports, read by `up`'s readiness wait and `status` (a cluster node's own too)
                *(f"{node_control_folder(prefix, rank)}{n}.json" for rank in range(max(spec.nodes, 2))
                  for n in ("ready", "verify", "heartbeat", "manifest"))]
        for key in keys:
            hit = [rid for rid, prefix in rules if key.startswith(prefix)]
            assert not hit, f"{path.name}: {key} expires after {spec.checkpoints.lifecycle.keep_days} days by {hit}"


def test_the_instance_writer_and_the_bake_gate_name_the_same_key() -> None:
    """The instance copies its ready record to ``ready_record_uri``; the program lists ``ready_folder(prefix)``."""
    assert record_uri("s3://bkt/team/llama/", READY_FOLDER) == f"s3://bkt/{ready_folder('team/llama/')}"
    assert record_uri("oss://bkt/checkpoints/", READY_FOLDER) == "oss://bkt/_gpulease/checkpoints/ready/"


def test_a_prefix_inside_the_records_folder_is_refused() -> None:
    config = load_stack_file(STACKS_DIR / "Pulumi.aws-lora-7b.yaml")
    key = next(k for k in config if k.endswith(":experiment") or k == "gpulease:experiment")
    config[key].setdefault("checkpoints", {})["prefix"] = "_gpulease/ck/"
    with pytest.raises(SpecError, match="_gpulease"):
        load_stack_spec("s", config)


def test_the_instance_fetches_the_key_the_program_writes_and_may_read_only_that() -> None:
    """The settings' ``tools.key`` (what ``instance/fetch_tools.py`` GETs at every boot), the bundle object the program
    uploads and the role's one read grant name the same key, outside the expiring checkpoint prefix."""
    import json

    from tests.support.specs import experiment, render_experiment
    from tests.support.userdata import INSTANCE, SPEC_OVERRIDES, cloud_config, decode, files

    r = render_experiment(experiment(**SPEC_OVERRIDES))
    assert r.error is None, r.error
    written = files(cloud_config(decode(r.one(INSTANCE).inputs["userDataBase64"])))
    settings = json.loads(written["/etc/gpulease/settings.json"]["content"])
    obj = r.one("aws:s3/bucketObjectv2:BucketObjectv2")
    grant = next(p for p in r.of_type("aws:iam/rolePolicy:RolePolicy") if p.name.endswith("-tools-read"))
    (statement,) = json.loads(grant.inputs["policy"])["Statement"]
    prefix = settings["checkpoint_uri"].split("://", 1)[1].partition("/")[2]
    assert prefix and settings["tools"]["key"] == obj.inputs["key"] == tools_key(prefix)
    assert statement["Action"] == "s3:GetObject" and statement["Resource"].endswith(f":::{obj.inputs['bucket']}/{obj.inputs['key']}")
    assert not obj.inputs["key"].startswith(prefix), "the bundle would expire with the checkpoints"


def test_the_instance_writes_its_reports_where_status_and_up_read_them() -> None:
    """The ``control_uri`` setting (the instance's writer) and the operator's ``control_folder`` name one folder."""
    from gpulease.ephemeral.channel import parse_bucket_uri
    from tests.support.specs import experiment, render_experiment
    from tests.support.userdata import INSTANCE, SPEC_OVERRIDES, cloud_config, decode, files

    r = render_experiment(experiment(**SPEC_OVERRIDES))
    assert r.error is None, r.error
    written = files(cloud_config(decode(r.one(INSTANCE).inputs["userDataBase64"])))
    settings = __import__("json").loads(written["/etc/gpulease/settings.json"]["content"])
    loc = parse_bucket_uri(settings["checkpoint_uri"])
    assert settings["control_uri"] == f"s3://{loc.bucket}/{loc.records}" == record_uri(settings["checkpoint_uri"], CONTROL_FOLDER)
    assert not loc.records.startswith(loc.prefix), "the reports would expire with the checkpoints"
