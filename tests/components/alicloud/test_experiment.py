"""The Alibaba Cloud experiment under mocks: the exact inputs the engine would send to the provider."""

from __future__ import annotations

import itertools
import json
from datetime import timedelta

import pytest

from components.spec.experiment import ExperimentSpec
from gpulease.core import vocabulary as v
from gpulease.review.mocks import ALICLOUD_ACCOUNT_ID, CloudMocks
from gpulease.review.render import render
from policies.guardrails.taggable import is_taggable, resource_class
from tests.support.alicloud import (
    BUCKET,
    BUCKET_ACL,
    BUCKET_PAB,
    BUCKET_POLICY,
    DISK,
    DISK_ATTACHMENT,
    INSTANCE,
    KEY_PAIR,
    RAM_POLICY,
    RAM_ROLE,
    RAM_ROLE_ATTACHMENT,
    SG,
    SG_RULE,
    VPC,
    VSWITCH,
    ali_experiment,
    ingress_rules,
    render_ali,
    user_data_text,
)
from tests.support.clock import FIXED_NOW

DEADLINE = "2026-12-01T16:00:00Z"  # FIXED_NOW + 8 h


@pytest.fixture(scope="module")
def spot():
    r = render_ali(ali_experiment())
    assert r.error is None, r.error
    return r


def test_component_type_and_every_child_parented(spot) -> None:
    (component,) = [r for r in spot.resources if r.type == "gpulease:alicloud:GpuExperiment"]
    assert component.name == "exp1"
    for r in spot.resources:
        if r is not component:
            assert r.parent == component.urn, f"{r.type} {r.name} is not a child of the component"


def test_ssh_only_from_the_named_cidrs(spot) -> None:
    rules = ingress_rules(spot)
    assert len(rules) == 2  # one rule per CIDR
    seen = {(r.inputs.get("cidrIp"), r.inputs.get("ipv6CidrIp")) for r in rules}
    assert seen == {("203.0.113.7/32", None), (None, "2001:db8:1234::/48")}
    sg = spot.one(SG)
    for rule in rules:
        assert rule.inputs["ipProtocol"] == "tcp"
        assert rule.inputs["portRange"] == "22/22"
        assert rule.inputs["policy"] == "accept"
        assert rule.inputs["nicType"] == "intranet"
        assert rule.inputs["securityGroupId"] == sg.id
        assert rule.inputs["description"] == f"SSH from {rule.inputs.get('cidrIp') or rule.inputs.get('ipv6CidrIp')}"
    assert spot.one(INSTANCE).inputs["securityGroups"] == [sg.id]
    assert sg.inputs["vpcId"] == spot.one(VPC).id


def test_ipv4_only_rule_sets_cidr_ip_explicitly() -> None:
    r = render_ali(ali_experiment(ssh={**ali_experiment()["ssh"], "allowedCidrs": ["198.51.100.0/24"]}))
    (rule,) = ingress_rules(r)
    assert rule.inputs["cidrIp"] == "198.51.100.0/24" and "ipv6CidrIp" not in rule.inputs


def test_cloud_assistant_mode_has_no_inbound_rule() -> None:
    r = render_ali(ali_experiment(ssh={"mode": "cloud-assistant"}))
    assert r.error is None, r.error
    assert ingress_rules(r) == []
    assert r.of_type(KEY_PAIR) == []
    instance = r.one(INSTANCE)
    assert "keyName" not in instance.inputs
    assert r.outputs["sshCommand"] == f"ali-instance-cli session --instance {instance.id}"


def test_egress_stays_open_for_packages_and_checkpoints(spot) -> None:
    (egress,) = [x for x in spot.of_type(SG_RULE) if x.inputs["type"] == "egress"]
    assert (egress.inputs["cidrIp"], egress.inputs["ipProtocol"], egress.inputs["portRange"]) == ("0.0.0.0/0", "all", "-1/-1")


def test_key_pair_from_public_key_or_existing_name(spot) -> None:
    key = spot.one(KEY_PAIR)
    assert key.inputs["publicKey"] == ali_experiment()["ssh"]["publicKey"]
    assert spot.one(INSTANCE).inputs["keyName"] == key.outputs["keyPairName"]
    named = render_ali(ali_experiment(ssh={"allowedCidrs": ["203.0.113.7/32"], "keyName": "alice-key"}))
    assert named.of_type(KEY_PAIR) == []
    assert named.one(INSTANCE).inputs["keyName"] == "alice-key"


def test_vpc_and_vswitch_in_the_instance_zone(spot) -> None:
    vpc = spot.one(VPC)
    vsw = spot.one(VSWITCH)
    assert vpc.inputs["cidrBlock"] == "10.42.0.0/16"
    assert vsw.inputs["vpcId"] == vpc.id
    assert vsw.inputs["zoneId"] == spot.outputs["availabilityZone"] == "cn-hangzhou-h"
    assert vsw.inputs["cidrBlock"] == "10.42.7.0/24"  # 'h' is the 8th letter: a fixed block per zone
    assert spot.one(INSTANCE).inputs["vswitchId"] == vsw.id


def test_existing_vswitch_is_used_and_no_network_created() -> None:
    from gpulease.review.mocks_alicloud import _ali_resource_id

    mocks = CloudMocks(region="cn-hangzhou")
    vsw = _ali_resource_id(mocks, "vsw", "existing", "cn-hangzhou-j")
    r = render_ali(ali_experiment(network={"subnetId": vsw}), mocks=mocks)
    assert r.error is None, r.error
    assert r.of_type(VPC) == [] and r.of_type(VSWITCH) == []
    assert r.one(INSTANCE).inputs["vswitchId"] == vsw
    assert r.outputs["availabilityZone"] == "cn-hangzhou-j"
    assert r.one(DISK).inputs["zoneId"] == "cn-hangzhou-j"
    assert r.one(SG).inputs["vpcId"] == _ali_resource_id(mocks, "vpc", "existing")


def test_existing_vpc_picks_its_vswitch_in_an_offering_zone() -> None:
    r = render_ali(ali_experiment(network={"vpcId": "vpc-bp1existing0000000001", "availabilityZone": "cn-hangzhou-i"}))
    assert r.error is None, r.error
    assert r.of_type(VPC) == [] and r.of_type(VSWITCH) == []
    assert r.one(SG).inputs["vpcId"] == "vpc-bp1existing0000000001"
    assert r.outputs["availabilityZone"] == "cn-hangzhou-i"


def test_zone_lookup_asks_for_the_type_market_and_disk() -> None:
    mocks = CloudMocks(region="cn-hangzhou")
    render_ali(ali_experiment(), mocks=mocks)
    (call,) = [a for token, a in mocks.calls if token == "alicloud:index/getZones:getZones"]
    assert call == {
        "availableInstanceType": "ecs.gn7i-c8g1.2xlarge",
        "availableResourceCreation": "Instance",
        "availableDiskCategory": "cloud_essd",
        "instanceChargeType": "PostPaid",
        "spotStrategy": "SpotAsPriceGo",
    }


def test_large_gpu_types_go_to_a_zone_that_offers_them() -> None:
    r = render_ali(ali_experiment(gpu={"instanceType": "ecs.gn7e-c16g1.4xlarge"}, budgetUsd=400))
    assert r.error is None, r.error
    assert r.outputs["availabilityZone"] == "cn-hangzhou-i"  # the mocks stock gn7e only in i and j


def test_unoffered_zone_registers_nothing() -> None:
    r = render_ali(ali_experiment(gpu={"instanceType": "ecs.gn7e-c16g1.4xlarge"}, network={"availabilityZone": "cn-hangzhou-h"}))
    assert [x.type for x in r.resources] == []
    assert "not offered in cn-hangzhou-h" in r.error and "cn-hangzhou-i" in r.error


def test_spot_instance_inputs(spot) -> None:
    inputs = spot.one(INSTANCE).inputs
    assert inputs["instanceType"] == "ecs.gn7i-c8g1.2xlarge"
    assert inputs["instanceChargeType"] == "PostPaid"
    assert inputs["spotStrategy"] == "SpotAsPriceGo"
    assert inputs["spotInterruptionBehavior"] == "Stop"  # spot with checkpoints recovers by default (spot_recovery)
    assert "spotPriceLimit" not in inputs
    assert inputs["httpTokens"] == "required" and inputs["httpEndpoint"] == "enabled"
    # Documented as "not available for use yet" by pulumi_alicloud 4.0.0: never sent.
    assert "httpPutResponseHopLimit" not in inputs
    assert (inputs["systemDiskCategory"], inputs["systemDiskEncrypted"], inputs["systemDiskSize"]) == ("cloud_essd", True, 100)
    assert inputs["imageId"] == "ubuntu_22_04_x64_20G_alibase_20261101.vhd"
    assert inputs["internetMaxBandwidthOut"] > 0


def test_max_spot_price_and_on_demand() -> None:
    capped = render_ali(ali_experiment(maxSpotPriceUsd=1.25)).one(INSTANCE).inputs
    assert (capped["spotStrategy"], capped["spotPriceLimit"]) == ("SpotWithPriceLimit", 1.25)
    assert capped["spotInterruptionBehavior"] == "Stop"  # recovers by default
    od = render_ali(ali_experiment(market="on-demand", onDemandReason="interactive profiling - no interruptions"))
    assert od.error is None, od.error
    inputs = od.one(INSTANCE).inputs
    assert inputs["instanceChargeType"] == "PostPaid" and inputs["spotStrategy"] == "NoSpot"
    assert "spotInterruptionBehavior" not in inputs
    assert inputs["tags"][v.TAG_ON_DEMAND_REASON] == "interactive profiling - no interruptions"


def test_image_lookup_and_explicit_image() -> None:
    mocks = CloudMocks(region="cn-hangzhou")
    r = render_ali(ali_experiment(), mocks=mocks)
    (call,) = [a for token, a in mocks.calls if token == "alicloud:ecs/getImages:getImages"]
    assert call["nameRegex"] == "^ubuntu_22_04_x64_20G_alibase_" and call["owners"] == "system"
    assert call["instanceType"] == "ecs.gn7i-c8g1.2xlarge" and call["mostRecent"] is True
    # A newer image of the family must not replace a running experiment.
    assert r.one(INSTANCE).ignore_changes == ["imageId"]
    explicit = render_ali(ali_experiment(image={"id": "m-bp1abcdefghij1234567"}))
    assert explicit.one(INSTANCE).inputs["imageId"] == "m-bp1abcdefghij1234567"
    assert explicit.one(INSTANCE).ignore_changes == []


def test_the_default_image_has_no_nvidia_driver() -> None:
    """Alibaba's public Ubuntu image carries no GPU driver: the instance must install it (docs/provider-facts.md)."""
    assert ExperimentSpec.model_validate(ali_experiment()).nvidia_driver == "absent"
    assert ExperimentSpec.model_validate(ali_experiment(image={"id": "m-bp1abcdefghij1234567"})).nvidia_driver == "unknown"


def test_every_instance_replacement_is_ordered_with_its_attachment(spot) -> None:
    """A pinned image that changes replaces the instance (not an in-place system-disk swap), and any replacement
    releases the old instance and drops its disk attachment before the new ones are created."""
    instance = spot.one(INSTANCE)
    assert instance.delete_before_replace is True
    assert instance.replace_on_changes == ["imageId", "spotInterruptionBehavior"]
    attachment = spot.one(DISK_ATTACHMENT)
    assert attachment.delete_before_replace is True
    assert attachment.property_dependencies["instanceId"] == [instance.urn]


def test_auto_release_time_is_the_recorded_deadline(spot) -> None:
    assert spot.one(INSTANCE).inputs["autoReleaseTime"] == DEADLINE
    assert spot.outputs["deadline"] == DEADLINE


def test_explicit_deadline_is_rounded_down_to_the_minute() -> None:
    r = render_ali(ali_experiment(expiresAt="2026-12-01T12:30:45Z"))
    assert r.error is None, r.error
    assert r.outputs["deadline"] == "2026-12-01T12:30:45Z"
    assert r.one(INSTANCE).inputs["autoReleaseTime"] == "2026-12-01T12:30:00Z"


def test_deadline_survives_a_second_run_and_a_close_one_stops_the_update() -> None:
    first = render_ali(ali_experiment())
    second = render_ali(ali_experiment(), now=FIXED_NOW + timedelta(hours=3), prior=first)
    assert second.error is None, second.error
    assert second.one(INSTANCE).inputs["autoReleaseTime"] == DEADLINE
    close = render_ali(ali_experiment(), now=FIXED_NOW + timedelta(hours=7, minutes=45), prior=first)
    assert close.error and "less than 30 minutes away" in close.error and "deadlineRenewal" in close.error
    assert close.of_type(INSTANCE) == []


@pytest.mark.parametrize(
    ("overrides", "field", "words"),
    [
        ({"maxRuntimeHours": 0.25}, "gpulease:experiment.maxRuntimeHours", "30 minutes"),
        ({"expiresAt": "2026-12-01T08:20:00Z"}, "gpulease:experiment.expiresAt", "less than 30 minutes away"),
        ({"expiresAt": "2026-12-01T07:00:00Z"}, "gpulease:experiment.expiresAt", "less than 30 minutes away"),
        ({"expiresAt": "2026-12-01T20:00:00Z"}, "gpulease:experiment.expiresAt", "more than maxRuntimeHours"),
        ({"expiresAt": "2026-12-01T12:00:00"}, "gpulease:experiment.expiresAt", "no UTC offset"),
    ],
)
def test_invalid_deadlines_are_refused_with_the_field_named(overrides, field, words) -> None:
    r = render_ali(ali_experiment(**overrides), stack="bad")
    assert [x.type for x in r.resources] == []
    assert "stack 'bad'" in r.error and field in r.error and words in r.error


def test_data_disk_encrypted_in_the_instance_zone_and_retained(spot) -> None:
    disk = spot.one(DISK)
    assert disk.inputs["encrypted"] is True
    assert disk.inputs["deleteWithInstance"] is False
    assert (disk.inputs["category"], disk.inputs["size"], disk.inputs["performanceLevel"]) == ("cloud_essd", 100, "PL1")
    assert disk.inputs["zoneId"] == spot.one(VSWITCH).inputs["zoneId"] == spot.outputs["availabilityZone"]
    assert disk.retain_on_delete is True and disk.protect is False
    assert disk.inputs["tags"][v.TAG_RETAIN] == "true"
    attach = spot.one(DISK_ATTACHMENT)
    assert attach.inputs["diskId"] == disk.id
    assert attach.inputs["instanceId"] == spot.one(INSTANCE).id
    assert attach.inputs["deleteWithInstance"] is False
    assert attach.retain_on_delete is True  # never force-detach a mounted disk on destroy
    assert disk.urn in spot.one(INSTANCE).dependencies
    # A bigger sizeGb takes effect without a restart.
    assert disk.inputs["type"] == "online"


def test_data_disk_not_retained_when_asked_and_performance_level() -> None:
    r = render_ali(ali_experiment(dataDisk={"sizeGb": 500, "retain": False, "performanceLevel": "PL2", "kmsKeyId": "key-hzz6"}))
    disk = r.one(DISK)
    assert disk.retain_on_delete is False and disk.inputs["tags"][v.TAG_RETAIN] == "false"
    assert (disk.inputs["size"], disk.inputs["performanceLevel"], disk.inputs["kmsKeyId"]) == (500, "PL2", "key-hzz6")


def test_existing_disk_is_reattached_in_its_zone_not_managed() -> None:
    disk_id = "d-bp1abcdefghij1234567"
    mocks = CloudMocks(region="cn-hangzhou", existing_volumes={disk_id: "cn-hangzhou-k"})
    r = render_ali(ali_experiment(dataDisk={"existingVolumeId": disk_id}), mocks=mocks)
    assert r.error is None, r.error
    assert r.of_type(DISK) == []
    assert r.one(DISK_ATTACHMENT).inputs["diskId"] == disk_id
    assert r.outputs["availabilityZone"] == "cn-hangzhou-k"
    assert r.one(VSWITCH).inputs["zoneId"] == "cn-hangzhou-k"
    assert r.outputs["dataVolumeId"] == disk_id


def test_missing_existing_disk_registers_nothing() -> None:
    class NoDisks(CloudMocks):
        def call(self, args):
            if args.token == "alicloud:ecs/getEcsDisks:getEcsDisks":
                return {"ids": [], "disks": [], "id": "none"}
            return super().call(args)

    r = render_ali(ali_experiment(dataDisk={"existingVolumeId": "d-bp1abcdefghij1234567"}), mocks=NoDisks(region="cn-hangzhou"))
    assert [x.type for x in r.resources] == []
    assert "dataDisk.existingVolumeId" in r.error and "does not exist" in r.error


def test_checkpoint_bucket_private_encrypted_versioned_tls_only(spot) -> None:
    bucket = spot.one(BUCKET)
    name = bucket.inputs["bucket"]
    assert name.startswith("gpulease-llm-finetune-exp1-") and len(name) <= 63
    assert bucket.retain_on_delete is True and bucket.inputs["forceDestroy"] is False
    assert bucket.inputs["versioning"] == {"status": "Enabled"}
    assert bucket.inputs["serverSideEncryptionRule"] == {"sseAlgorithm": "AES256"}
    assert spot.one(BUCKET_ACL).inputs == {"bucket": name, "acl": "private"}
    assert spot.one(BUCKET_PAB).inputs == {"bucket": name, "blockPublicAccess": True}
    policy = json.loads(spot.one(BUCKET_POLICY).inputs["policy"])
    (deny,) = policy["Statement"]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"acs:SecureTransport": ["false"]}}
    assert deny["Resource"] == [f"acs:oss:*:{ALICLOUD_ACCOUNT_ID}:{name}", f"acs:oss:*:{ALICLOUD_ACCOUNT_ID}:{name}/*"]
    assert spot.outputs["checkpointUri"] == f"oss://{name}/ckpt/"


def test_disk_categories_resized_offline_are_left_to_the_default() -> None:
    disk = render_ali(ali_experiment(dataDisk={"type": "cloud_auto"})).one(DISK)
    assert disk.inputs["category"] == "cloud_auto" and "type" not in disk.inputs


def test_bucket_settings_apply_in_order_before_the_instance_starts(spot) -> None:
    """Versioning, encryption and lifecycle live on the bucket (applied in the provider's order); ACL, public
    access block and the TLS-only policy follow one after the other; the instance waits for all of them."""
    chain = [spot.one(t) for t in (BUCKET, BUCKET_ACL, BUCKET_PAB, BUCKET_POLICY)]
    for earlier, later in itertools.pairwise(chain):
        assert earlier.urn in later.dependencies, f"{later.name} does not wait for {earlier.name}"
    assert {r.urn for r in chain} <= set(spot.one(INSTANCE).dependencies)


def test_the_bootstrap_bucket_is_hardened_in_the_same_order_before_the_tools_object() -> None:
    """The tools' own bucket gets the checkpoint bucket's chain (ACL, public access block, TLS-only policy, one after
    the other), and the tools object waits for all of it."""
    r = render_ali(ali_experiment(market="on-demand", onDemandReason="interactive debugging - no interruptions",
                                  checkpoints={"enabled": False}))
    assert r.error is None, r.error
    chain = [r.one(t) for t in (BUCKET, BUCKET_ACL, BUCKET_PAB, BUCKET_POLICY)]
    assert chain[0].name == "exp1-bootstrap"
    for earlier, later in itertools.pairwise(chain):
        assert earlier.urn in later.dependencies, f"{later.name} does not wait for {earlier.name}"
    assert {res.urn for res in chain} <= set(r.one("alicloud:oss/bucketObject:BucketObject").dependencies)


def test_lifecycle_rules_follow_the_spec() -> None:
    spec = ali_experiment(
        checkpoints={
            "prefix": "runs/",
            "lifecycle": {
                "keepDays": 21,
                "noncurrentDays": 5,
                "abortIncompleteUploadDays": 3,
                "transitions": [{"days": 7, "storageClass": "IA"}, {"days": 14, "storageClass": "Archive"}],
            },
        }
    )
    bucket = render_ali(spec).one(BUCKET).inputs
    main, markers = bucket["lifecycleRules"]
    assert main["prefix"] == "runs/" and main["enabled"] is True
    assert main["expirations"] == [{"days": 21}]
    assert main["noncurrentVersionExpirations"] == [{"days": 5}]
    assert main["abortMultipartUploads"] == [{"days": 3}]
    assert main["transitions"] == [{"days": 7, "storageClass": "IA"}, {"days": 14, "storageClass": "Archive"}]
    assert markers["expirations"] == [{"expiredObjectDeleteMarker": True}] and markers["prefix"] == "runs/"
    assert bucket["lifecycleRuleAllowSameActionOverlap"] is True


def test_bucket_not_retained_when_asked() -> None:
    bucket = render_ali(ali_experiment(checkpoints={"retain": False})).one(BUCKET)
    assert bucket.retain_on_delete is False and bucket.inputs["forceDestroy"] is True


def test_existing_bucket_is_used_untouched() -> None:
    r = render_ali(ali_experiment(checkpoints={"bucket": "team-checkpoints", "prefix": "exp1/"}))
    assert r.error is None, r.error
    # Nothing touches team-checkpoints; the instance-side tools go to the stack's own bootstrap bucket instead.
    oss = [res for res in r.resources if res.type.startswith("alicloud:oss/")]
    assert all(res.inputs.get("bucket") != "team-checkpoints" for res in oss)
    assert {res.inputs["bucket"] for res in oss if res.type == BUCKET} == {"gpulease-boot-llm-finetune-exp1-org-unknown"}
    policy = json.loads(r.by_name("exp1-checkpoint-access").inputs["policyDocument"])
    rw = next(s for s in policy["Statement"] if "oss:PutObject" in s["Action"])
    assert rw["Resource"] == [f"acs:oss:*:{ALICLOUD_ACCOUNT_ID}:team-checkpoints/exp1/*"]
    assert r.outputs["checkpointUri"] == "oss://team-checkpoints/exp1/"


def test_instance_role_least_privilege(spot) -> None:
    name = spot.one(BUCKET).inputs["bucket"]
    bucket_arn = f"acs:oss:*:{ALICLOUD_ACCOUNT_ID}:{name}"
    role = spot.one(RAM_ROLE)
    trust = json.loads(role.inputs["assumeRolePolicyDocument"])
    assert trust["Statement"] == [{"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": ["ecs.aliyuncs.com"]}}]
    checkpoint_access = spot.by_name("exp1-checkpoint-access")
    policy = json.loads(checkpoint_access.inputs["policyDocument"])
    assert policy["Version"] == "1"
    by_action = {a: s for s in policy["Statement"] for a in s["Action"]}
    assert by_action["oss:ListObjects"]["Resource"] == [bucket_arn]
    assert by_action["oss:ListObjects"]["Condition"] == {"StringLike": {"oss:Prefix": ["ckpt/", "ckpt/*"]}}
    assert set(by_action) == {
        "oss:ListObjects", "oss:GetBucketInfo", "oss:GetBucketLocation",
        "oss:GetObject", "oss:PutObject", "oss:AbortMultipartUpload", "oss:ListParts",
    }
    for action in ("oss:GetObject", "oss:AbortMultipartUpload", "oss:ListParts"):
        assert by_action[action]["Resource"] == [f"{bucket_arn}/ckpt/*"]
    # Writes: the prefix, the ready records and the instance's reports only (outside the prefix the checkpoint
    # lifecycle expires).
    writes = sorted(r for s in policy["Statement"] if "oss:PutObject" in s["Action"] for r in s["Resource"])
    assert writes == [f"{bucket_arn}/_gpulease/ckpt/control/*", f"{bucket_arn}/_gpulease/ckpt/ready/*",
                      f"{bucket_arn}/ckpt/*"]
    for statement in policy["Statement"]:
        assert statement["Effect"] == "Allow"
        assert all(not a.endswith("*") for a in statement["Action"])
        assert all(res.startswith(bucket_arn) for res in statement["Resource"])
    attach = spot.by_name("exp1-checkpoint-access-attachment").inputs
    assert attach == {"roleName": role.outputs["roleName"], "policyName": checkpoint_access.outputs["policyName"], "policyType": "Custom"}
    # The other grants: releasing (or stopping) this one instance (test_the_role_may_release_its_own_instance), and
    # reading its one tools bundle, outside the prefix the checkpoint lifecycle expires.
    assert {p.name for p in spot.of_type(RAM_POLICY)} == {"exp1-checkpoint-access", "exp1-self-release", "exp1-tools-read"}
    (tools_read,) = json.loads(spot.by_name("exp1-tools-read").inputs["policyDocument"])["Statement"]
    key = spot.one("alicloud:oss/bucketObject:BucketObject").inputs["key"]
    assert tools_read["Action"] == ["oss:GetObject"] and tools_read["Resource"] == [f"{bucket_arn}/{key}"]
    assert key.startswith("_gpulease/ckpt/tools/")
    bound = spot.one(RAM_ROLE_ATTACHMENT).inputs
    assert bound == {"instanceId": spot.one(INSTANCE).id, "ramRoleName": role.outputs["roleName"]}


def test_no_bucket_means_a_role_without_storage_access() -> None:
    r = render_ali(
        ali_experiment(market="on-demand", onDemandReason="interactive debugging session", checkpoints={"enabled": False})
    )
    assert r.error is None, r.error
    # No checkpoint bucket and no checkpoint access; the role may only read the tools and release its instance.
    assert [b.inputs["bucket"] for b in r.of_type(BUCKET)] == ["gpulease-boot-llm-finetune-exp1-org-unknown"]
    assert {p.name for p in r.of_type(RAM_POLICY)} == {"exp1-tools-read", "exp1-self-release"}
    assert len(r.of_type(RAM_ROLE)) == 1 and len(r.of_type(RAM_ROLE_ATTACHMENT)) == 1
    assert r.outputs["checkpointUri"] == v.NO_CHECKPOINTS


def test_every_taggable_resource_carries_the_full_tag_set(spot) -> None:
    bucket = spot.one(BUCKET).inputs["bucket"]
    expected = {
        v.TAG_OWNER: "alice@example.com",
        v.TAG_PROJECT: "llm-finetune",
        v.TAG_EXPERIMENT: "exp1",
        v.TAG_COST_CENTER: "ml-research",
        v.TAG_BUDGET_USD: "40",
        v.TAG_EXPIRES_AT: DEADLINE,
        v.TAG_MAX_RUNTIME_HOURS: "8",
        v.TAG_CHECKPOINT_URI: f"oss://{bucket}/ckpt/",
        v.TAG_MANAGED_BY: "gpulease",
        v.TAG_STACK: "test",
    }
    alicloud_resources = [r for r in spot.custom_resources if r.type.startswith("alicloud:")]
    # Every type is known to the SDK, so the taggability check below cannot pass by not finding a class.
    assert all(resource_class(r.type) is not None for r in alicloud_resources)
    taggable = [r for r in spot.custom_resources if is_taggable(r.type)]
    assert {r.type for r in taggable} >= {INSTANCE, DISK, BUCKET, SG, VPC, VSWITCH, KEY_PAIR, RAM_ROLE, RAM_POLICY}
    for resource in taggable:
        tags = resource.inputs.get("tags") or {}
        missing = {k: val for k, val in expected.items() if tags.get(k) != val}
        assert not missing, f"{resource.type} {resource.name} lacks {missing}"
        assert len(tags) <= v.ALICLOUD_MAX_TAGS
        assert all(v.alicloud_tag_problem(k, val) is None for k, val in tags.items())
    assert spot.one(INSTANCE).inputs["volumeTags"] == spot.one(INSTANCE).inputs["tags"]


def test_outputs(spot) -> None:
    instance = spot.one(INSTANCE)
    out = spot.outputs
    assert out["instanceId"] == instance.id and instance.id.startswith("i-bp1")
    assert out["publicIp"] == instance.outputs["publicIp"]
    assert out["sshCommand"] == f"ssh ubuntu@{instance.outputs['publicIp']}"
    assert out["dataVolumeId"] == spot.one(DISK).id
    assert out["bucket"] == spot.one(BUCKET).inputs["bucket"]
    assert out["market"] == "spot" and out["deadline"] == DEADLINE
    assert set(out["experiments"]["exp1"]) == {
        "phase", "instanceId", "instanceType", "market", "publicIp", "sshCommand", "dataVolumeId",
        "availabilityZone", "checkpointUri", "deadline",
    }


def test_user_data_is_base64_cloud_config_with_the_settings(spot) -> None:
    text = user_data_text(spot.one(INSTANCE))
    assert text.startswith("#cloud-config\n")
    assert DEADLINE not in text and spot.one(DISK).id in text  # the deadline comes from the tag: renewals change no user-data
    assert '"cloud": "alicloud"' in text and f"oss://{spot.one(BUCKET).inputs['bucket']}/ckpt/" in text
    assert "LTAI" not in text and "PRIVATE KEY" not in text


def test_region_from_the_spec_gets_its_own_provider() -> None:
    r = render_ali(ali_experiment(region="ap-southeast-1"))
    assert r.error is None, r.error
    (provider,) = r.of_type("pulumi:providers:alicloud")
    assert provider.inputs["region"] == "ap-southeast-1"
    assert r.one(INSTANCE).provider.startswith(provider.urn)
    assert r.outputs["availabilityZone"].startswith("ap-southeast-1")


def test_tags_alibaba_would_refuse_register_nothing() -> None:
    long_prefix = "p" * 100 + "/"
    r = render_ali(ali_experiment(checkpoints={"prefix": long_prefix}), stack="bad")
    assert [x.type for x in r.resources] == []
    assert "stack 'bad'" in r.error and v.TAG_CHECKPOINT_URI in r.error and "128" in r.error


def test_sweep_shares_network_and_bucket_and_splits_the_rest() -> None:
    base = ali_experiment(name="sw")
    config = {
        "alicloud:region": "cn-hangzhou",
        "gpulease:sweep": {
            "base": base,
            "runs": [{"name": "a"}, {"name": "b", "overrides": {"gpu": {"gpuMemoryGb": 80}, "maxRuntimeHours": 10}}],
        },
    }
    r = render(config, stack="sweep", now=FIXED_NOW)
    assert r.error is None, r.error
    assert len(r.of_type(SG)) == 1 and len(r.of_type(BUCKET)) == 1 and len(r.of_type(VPC)) == 1
    instances = {i.name: i for i in r.of_type(INSTANCE)}
    assert instances["sw-b-instance"].inputs["instanceType"] == "ecs.gn7e-c16g1.4xlarge"
    # The runs landed in different zones (gn7e is stocked in fewer): one vSwitch per zone, one VPC.
    zones = {s.inputs["zoneId"] for s in r.of_type(VSWITCH)}
    assert zones == {r.outputs["experiments"]["sw-a"]["availabilityZone"], r.outputs["experiments"]["sw-b"]["availabilityZone"]}
    assert instances["sw-b-instance"].inputs["autoReleaseTime"] == "2026-12-01T18:00:00Z"
    bucket = r.one(BUCKET).inputs["bucket"]
    policies = {p.name: json.loads(p.inputs["policyDocument"]) for p in r.of_type(RAM_POLICY)}
    for run in ("sw-a", "sw-b"):
        rw = next(s for s in policies[f"{run}-checkpoint-access"]["Statement"] if "oss:PutObject" in s["Action"])
        assert rw["Resource"] == [f"acs:oss:*:{ALICLOUD_ACCOUNT_ID}:{bucket}/ckpt/{run}/*"]
        assert r.outputs["experiments"][run]["checkpointUri"] == f"oss://{bucket}/ckpt/{run}/"
    assert r.one(BUCKET).inputs["tags"][v.TAG_EXPIRES_AT] == "2026-12-01T18:00:00Z"
