"""The workflow before training in the program, under mocks: the preparation phase's CPU instance on the GPU's
disk and bucket, the parked phase without an instance, the data sources' permissions and settings, the baked image
from a ready instance's system disk only, and an image from another stack."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
import yaml

from components.userdata import SETTINGS_PATH, decode_user_data
from gpulease.core import vocabulary as v
from gpulease.core.catalog.cpu import load_cpu_catalog
from gpulease.review.mocks import ACCOUNT_ID, ALICLOUD_ACCOUNT_ID, CloudMocks
from gpulease.review.render import Rendering, render
from tests.support.clock import FIXED_NOW
from tests.support.specs import experiment

INSTANCES = {"aws": "aws:ec2/instance:Instance", "alicloud": "alicloud:ecs/instance:Instance"}
DISKS = {"aws": "aws:ebs/volume:Volume", "alicloud": "alicloud:ecs/ecsDisk:EcsDisk"}
REGIONS = {"aws": "us-east-1", "alicloud": "cn-hangzhou"}
SOURCES = [{"uri": "hf://meta-llama/Llama-2-7b-hf", "to": "/data/models/llama"},
           {"uri": "s3://alice-datasets/alpaca/", "to": "/data/raw/alpaca"}]


def spec_for(cloud: str, **overrides: Any) -> dict[str, Any]:
    base = experiment(cloud=cloud, gpu={"gpuMemoryGb": 24, "count": 1}, **overrides) if cloud == "alicloud" else \
        experiment(gpu={"gpuMemoryGb": 24, "count": 1}, **overrides)
    return base


def run(cloud: str, spec: dict[str, Any], *, mocks: CloudMocks | None = None, now=FIXED_NOW) -> Rendering:
    config = {f"{cloud}:region": REGIONS[cloud], "gpulease:experiment": spec}
    return render(config, stack="wf", now=now, mocks=mocks)


def settings_of(r: Rendering, cloud: str) -> dict[str, Any]:
    inst = r.one(INSTANCES[cloud])
    text = decode_user_data(inst.inputs["userDataBase64" if cloud == "aws" else "userData"])
    written = {f["path"]: f for f in yaml.safe_load(text)["write_files"]}
    return json.loads(written[SETTINGS_PATH]["content"])


# --- phases -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_prep_runs_the_cheapest_cpu_type_on_demand_in_the_gpus_zone_with_its_own_deadline(cloud: str) -> None:
    train = run(cloud, spec_for(cloud))
    prep = run(cloud, spec_for(cloud, phase="prep", prep={"vcpus": 4, "memoryGb": 16, "maxRuntimeHours": 10}))
    assert train.error is None and prep.error is None, prep.error
    inst = prep.one(INSTANCES[cloud])
    expected = load_cpu_catalog().cheapest(cloud, REGIONS[cloud], vcpus=4, memory_gb=16)
    assert inst.inputs["instanceType"] == expected.type and not v.is_gpu_instance_type(expected.type)
    if cloud == "aws":
        assert "instanceMarketOptions" not in inst.inputs  # on-demand
    else:
        assert inst.inputs["spotStrategy"] == "NoSpot"
    assert inst.inputs["tags"][v.TAG_ON_DEMAND_REASON].startswith("preparation phase")
    assert inst.inputs["tags"][v.TAG_MAX_RUNTIME_HOURS] == "10"
    # The data disk is where the GPU will run: the same zone, the same disk, in both phases.
    zone_key = "availabilityZone" if cloud == "aws" else "zoneId"
    assert prep.one(DISKS[cloud]).inputs[zone_key] == train.one(DISKS[cloud]).inputs[zone_key]
    # Its own deadline record: now + prep.maxRuntimeHours.
    (record,) = [x for x in prep.of_type("time:index/static:Static") if "-deadline" in x.name]
    assert record.name == "exp1-deadline-prep"
    assert record.inputs["rfc3339"] == v.rfc3339(FIXED_NOW + timedelta(hours=10))
    settings = settings_of(prep, cloud)
    assert settings["phase"] == "prep" and settings["idle_source"] == "cpu" and settings["idle_cpu_percent"] == 10
    assert settings["max_runtime_hours"] == 10 and settings["idle_minutes"] == 60
    assert "phase" not in settings_of(train, cloud)  # a train stack's settings are as they were


def test_prep_without_a_big_enough_cpu_type_names_the_field() -> None:
    r = run("aws", spec_for("aws", phase="prep", prep={"vcpus": 192, "memoryGb": 1536}))
    assert r.error is not None and "gpulease:experiment.prep" in r.error and "accepted: smaller prep.vcpus" in r.error
    assert r.resources == []


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_parked_keeps_the_disk_and_bucket_and_has_no_instance(cloud: str) -> None:
    r = run(cloud, spec_for(cloud, phase="parked"))
    assert r.error is None, r.error
    types = {x.type for x in r.resources}
    assert INSTANCES[cloud] not in types
    assert not [t for t in types if "ttachment" in t or "ole" in t.split("/")[-1].lower() or "chedule" in t]
    disk = r.one(DISKS[cloud])
    assert disk.retain_on_delete is True
    out = r.outputs["experiments"]["exp1"]
    assert out["phase"] == "parked" and out["instanceId"] is None and out["dataVolumeId"] == disk.id


# --- data sources: settings and least-privilege permissions ---------------------------------------------------


def test_aws_data_sources_reach_the_settings_and_the_role_reads_only_their_prefixes_and_secret() -> None:
    r = run("aws", spec_for("aws", data={"sources": SOURCES, "hubTokenSecret": "gpulease/hf-token"}))
    assert r.error is None, r.error
    settings = settings_of(r, "aws")
    assert settings["data_sources"] == [
        {"uri": "hf://meta-llama/Llama-2-7b-hf", "to": "/data/models/llama", "revision": "main"},
        {"uri": "s3://alice-datasets/alpaca/", "to": "/data/raw/alpaca"}]
    assert settings["hub_token_secret"] == "gpulease/hf-token"
    assert settings["secret_command"][:2] == ["aws", "secretsmanager"]
    (policy,) = [p for p in r.of_type("aws:iam/rolePolicy:RolePolicy") if p.name == "exp1-data-sources"]
    doc = json.loads(policy.inputs["policy"])
    assert doc["Statement"] == [
        {"Sid": "ListSource0", "Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::alice-datasets",
         "Condition": {"StringLike": {"s3:prefix": ["alpaca/", "alpaca/*"]}}},
        {"Sid": "ReadSource0", "Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::alice-datasets/alpaca/*"},
        {"Sid": "ReadHubToken", "Effect": "Allow", "Action": "secretsmanager:GetSecretValue",
         "Resource": f"arn:aws:secretsmanager:us-east-1:{ACCOUNT_ID}:secret:gpulease/hf-token-??????"},
    ]


def test_alicloud_data_sources_get_oss_prefix_reads_and_one_kms_secret() -> None:
    sources = [{"uri": "oss://alice-datasets/alpaca/", "to": "/data/raw/alpaca"}]
    r = run("alicloud", spec_for("alicloud", data={"sources": sources, "hubTokenSecret": "hf-token"}))
    assert r.error is None, r.error
    (policy,) = [p for p in r.of_type("alicloud:ram/policy:Policy") if p.name == "exp1-data-sources"]
    doc = json.loads(policy.inputs["policyDocument"])
    assert doc["Statement"] == [
        {"Effect": "Allow", "Action": ["oss:ListObjects"], "Resource": [f"acs:oss:*:{ALICLOUD_ACCOUNT_ID}:alice-datasets"],
         "Condition": {"StringLike": {"oss:Prefix": ["alpaca/", "alpaca/*"]}}},
        {"Effect": "Allow", "Action": ["oss:GetObject"], "Resource": [f"acs:oss:*:{ALICLOUD_ACCOUNT_ID}:alice-datasets/alpaca/*"]},
        {"Effect": "Allow", "Action": ["kms:GetSecretValue"],
         "Resource": [f"acs:kms:cn-hangzhou:{ALICLOUD_ACCOUNT_ID}:secret/hf-token"]},
    ]
    assert settings_of(r, "alicloud")["stage_commands"]["prefix"][:4] == ["ossutil", "cp", "-r", "-u"]


def test_no_sources_no_staging_permission() -> None:
    r = run("aws", spec_for("aws"))
    assert not [p for p in r.of_type("aws:iam/rolePolicy:RolePolicy") if p.name == "exp1-data-sources"]


# --- the baked image -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_bake_images_the_system_disk_of_a_ready_instance_retained_and_tagged(cloud: str) -> None:
    r = run(cloud, spec_for(cloud, image={"bake": True, "retainDays": 14}))
    assert r.error is None, r.error
    inst = r.one(INSTANCES[cloud])
    if cloud == "aws":
        snapshot, image = r.one("aws:ebs/snapshot:Snapshot"), r.one("aws:ec2/ami:Ami")
        root = inst.outputs["rootBlockDevice"]["volumeId"]
        assert snapshot.inputs["volumeId"] == root  # the system disk, not the data volume
        assert snapshot.inputs["volumeId"] != r.one(DISKS[cloud]).id
        assert image.inputs["ebsBlockDevices"] == [{"deviceName": "/dev/sda1", "snapshotId": snapshot.id,
                                                    "volumeType": "gp3", "deleteOnTermination": True}]
        assert image.inputs["rootDeviceName"] == "/dev/sda1" and image.inputs["imdsSupport"] == "v2.0"
    else:
        snapshot, image = r.one("alicloud:ecs/ecsSnapshot:EcsSnapshot"), r.one("alicloud:ecs/image:Image")
        assert snapshot.inputs["diskId"] == inst.outputs["systemDiskId"] != r.one(DISKS[cloud]).id
        assert image.inputs["snapshotId"] == snapshot.id and "instanceId" not in image.inputs
    until = v.rfc3339(FIXED_NOW + timedelta(days=14))
    for res in (snapshot, image):
        assert res.retain_on_delete is True
        assert res.inputs["tags"][v.TAG_RETAIN_UNTIL] == until and res.inputs["tags"][v.TAG_RETAIN] == "false"
        assert v.is_managed(res.inputs["tags"])
    baked = r.outputs["bakedImage"]
    assert baked == {"id": image.id, "stack": "wf", "experiment": "exp1", "createdAt": v.rfc3339(FIXED_NOW),
                     "retainUntil": until}


class NotReady(CloudMocks):
    def __init__(self, **kw: Any):
        super().__init__(**kw)
        self.ready = False


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_bake_refuses_an_instance_without_a_ready_record(cloud: str) -> None:
    r = run(cloud, spec_for(cloud, image={"bake": True}), mocks=NotReady(region=REGIONS[cloud], now=FIXED_NOW))
    assert r.error is not None and "has not passed readiness" in r.error
    inst = r.one(INSTANCES[cloud])
    assert "no ready record" in r.error and f"_gpulease/ckpt/ready/{inst.id}.json" in r.error
    images = [x for x in r.resources if x.type in ("aws:ec2/ami:Ami", "alicloud:ecs/image:Image")]
    assert images == [] or all("snapshotId" not in x.inputs and "ebsBlockDevices" not in x.inputs for x in images)


def test_bake_needs_the_checkpoint_bucket() -> None:
    r = run("aws", spec_for("aws", market="on-demand", onDemandReason="interactive debugging session",
                            checkpoints={"enabled": False}, image={"bake": True}))
    assert r.error is not None and "image.bake" in r.error and r.resources == []


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_from_stack_uses_the_referenced_image_and_says_where_it_came_from(cloud: str) -> None:
    mocks = CloudMocks(region=REGIONS[cloud], now=FIXED_NOW)
    r = run(cloud, spec_for(cloud, image={"fromStack": "org/llm/base-image"}), mocks=mocks)
    assert r.error is None, r.error
    inst = r.one(INSTANCES[cloud])
    key = "ami" if cloud == "aws" else "imageId"
    from gpulease.review.mocks_images import baked_image

    expected = baked_image("org/llm/base-image", mocks)
    assert inst.inputs[key] == expected["id"]
    assert not [c for c in mocks.calls if c[0] in ("aws:ec2/getAmi:getAmi", "alicloud:ecs/getImages:getImages")]
    assert r.outputs["experiments"]["exp1"]["imageFrom"] == (
        f"{expected['id']} from stack base-image (experiment base-image), baked {expected['createdAt']} (3 days ago), "
        f"kept until {expected['retainUntil']}")
    # A changed image replaces on purpose (never ignored like a family's newer image).
    assert key not in (inst.ignore_changes or [])
