"""The AWS experiment under mocks: the exact inputs the engine would send to the provider."""

from __future__ import annotations

import itertools
import json
from datetime import timedelta

import pytest

from components.aws.spec import AMI_FAMILIES
from components.aws.storage import OBJECT_TAG_KEYS
from components.spec.experiment import ExperimentSpec
from components.userdata import decode_user_data
from gpulease.core import resources as rt
from gpulease.core import vocabulary as v
from gpulease.review.mocks import ACCOUNT_ID, CloudMocks
from gpulease.review.mocks_aws import _subnet_id
from policies.guardrails.taggable import is_taggable
from tests.support.clock import FIXED_NOW
from tests.support.specs import experiment, render_experiment

INSTANCE = "aws:ec2/instance:Instance"
VOLUME = "aws:ebs/volume:Volume"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
BUCKET = "aws:s3/bucket:Bucket"
SCHEDULE = "aws:scheduler/schedule:Schedule"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
DEADLINE = "2026-12-01T16:00:00Z"  # FIXED_NOW + 8 h


@pytest.fixture(scope="module")
def spot():
    r = render_experiment(experiment())
    assert r.error is None, r.error
    return r


def terminating(r, name: str = "exp1"):
    """The schedule that terminates an experiment's instance (a recovering one also has ``<name>-spot-cancel``)."""
    (schedule,) = [s for s in r.of_type(SCHEDULE) if s.name == f"{name}-deadline"]
    return schedule


def deadline_records(r):
    """The deadline's time:Static records (the budget's period start is another, components/aws/budget.py)."""
    return [x for x in r.of_type("time:index/static:Static") if "-deadline" in x.name]


def user_data_text(instance) -> str:
    return decode_user_data(instance.inputs["userDataBase64"])


def test_ssh_only_from_the_named_cidrs(spot) -> None:
    rules = spot.of_type(INGRESS)
    seen = {(r.inputs.get("cidrIpv4"), r.inputs.get("cidrIpv6")) for r in rules}
    assert seen == {("203.0.113.7/32", None), (None, "2001:db8:1234::/48")}
    sg = spot.one("aws:ec2/securityGroup:SecurityGroup")
    for rule in rules:
        assert rule.inputs["ipProtocol"] == "tcp"
        assert (rule.inputs["fromPort"], rule.inputs["toPort"]) == (22, 22)
        assert rule.inputs["securityGroupId"] == sg.id
        assert rule.inputs["description"].startswith("SSH from ")
    instance = spot.one(INSTANCE)
    assert instance.inputs["vpcSecurityGroupIds"] == [sg.id]
    assert "ingress" not in sg.inputs  # no inline rules beside the described ones


def test_ssm_mode_has_no_inbound_rule_and_gets_session_access() -> None:
    r = render_experiment(experiment(ssh={"mode": "ssm"}))
    assert r.error is None, r.error
    assert r.of_type(INGRESS) == []
    assert r.of_type("aws:ec2/keyPair:KeyPair") == []
    attach = r.one("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    assert attach.inputs["policyArn"] == "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"
    instance = r.one(INSTANCE)
    assert "keyName" not in instance.inputs
    assert r.outputs["sshCommand"] == f"aws ssm start-session --target {instance.id} --region us-east-1"


def test_egress_stays_open_for_packages_and_checkpoints(spot) -> None:
    cidrs = {(e.inputs.get("cidrIpv4"), e.inputs.get("cidrIpv6"), e.inputs["ipProtocol"]) for e in spot.of_type(EGRESS)}
    assert cidrs == {("0.0.0.0/0", None, "-1"), (None, "::/0", "-1")}


def test_key_pair_from_public_key(spot) -> None:
    key = spot.one("aws:ec2/keyPair:KeyPair")
    assert key.inputs["publicKey"] == experiment()["ssh"]["publicKey"]
    assert spot.one(INSTANCE).inputs["keyName"] == key.outputs["keyName"]


def test_spot_instance_inputs(spot) -> None:
    inputs = spot.one(INSTANCE).inputs
    assert inputs["instanceType"] == "g5.xlarge"
    # Spot with checkpoints recovers by default (tests/components/aws/test_spot_recovery.py has the rest).
    assert inputs["instanceMarketOptions"] == {
        "marketType": "spot",
        "spotOptions": {"instanceInterruptionBehavior": "stop", "spotInstanceType": "persistent"},
    }
    assert inputs["instanceInitiatedShutdownBehavior"] == "terminate"
    assert inputs["metadataOptions"]["httpTokens"] == "required"
    assert inputs["metadataOptions"]["httpEndpoint"] == "enabled"
    root = inputs["rootBlockDevice"]
    assert (root["encrypted"], root["volumeType"], root["volumeSize"], root["deleteOnTermination"]) == (True, "gp3", 100, True)
    profile = spot.one("aws:iam/instanceProfile:InstanceProfile")
    assert inputs["iamInstanceProfile"] == profile.outputs["name"]
    assert inputs["ami"].startswith("ami-")


def test_max_spot_price_and_on_demand() -> None:
    capped = render_experiment(experiment(maxSpotPriceUsd=0.45)).one(INSTANCE).inputs
    assert capped["instanceMarketOptions"]["spotOptions"]["maxPrice"] == "0.45"
    # Plain digits, every one of them: "%g" would send "123.457" for 123.4567 (a different price) and "1e-05"
    # style exponents below the spec's range.
    for price, sent in ((0.001, "0.001"), (123.4567, "123.4567"), (999.99999, "999.99999"), (2.0, "2")):
        inputs = render_experiment(experiment(maxSpotPriceUsd=price, budgetUsd=1e6)).one(INSTANCE).inputs
        assert inputs["instanceMarketOptions"]["spotOptions"]["maxPrice"] == sent
    od = render_experiment(experiment(market="on-demand", onDemandReason="interactive profiling - no interruptions"))
    assert od.error is None, od.error
    inputs = od.one(INSTANCE).inputs
    assert "instanceMarketOptions" not in inputs
    assert inputs["tags"][v.TAG_ON_DEMAND_REASON] == "interactive profiling - no interruptions"


def test_image_lookup_is_the_deep_learning_base_ami() -> None:
    mocks = CloudMocks(region="us-east-1")
    r = render_experiment(experiment(), mocks=mocks)
    calls = [args for token, args in mocks.calls if token == "aws:ec2/getAmi:getAmi"]
    assert len(calls) == 1
    # Every lookup happens once, in prepare(), before anything is registered.
    assert [token for token, _ in mocks.calls].count("aws:index/getCallerIdentity:getCallerIdentity") == 1
    names = [f["values"] for f in calls[0]["filters"] if f["name"] == "name"]
    assert names == [["Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *"]]
    assert calls[0]["owners"] == ["amazon"] and calls[0]["mostRecent"] is True
    explicit = render_experiment(experiment(image={"id": "ami-0123456789abcdef0"}))
    assert explicit.one(INSTANCE).inputs["ami"] == "ami-0123456789abcdef0"
    assert r.error is None


def test_which_images_bring_the_nvidia_driver() -> None:
    """The Deep Learning AMIs carry the driver (their names say so); Canonical's Ubuntu does not; a pinned image
    is unknown until readiness runs nvidia-smi on it."""
    for family in AMI_FAMILIES.values():
        assert (family["nvidia_driver"] == "preinstalled") == ("Nvidia Driver" in family["name"])
    assert ExperimentSpec.model_validate(experiment()).nvidia_driver == "preinstalled"
    assert ExperimentSpec.model_validate(experiment(image={"family": "ubuntu-22.04"})).nvidia_driver == "absent"
    assert ExperimentSpec.model_validate(experiment(image={"id": "ami-0123456789abcdef0"})).nvidia_driver == "unknown"


def test_a_newer_family_image_never_replaces_the_instance_and_every_replacement_is_ordered(spot) -> None:
    """``ami`` is replace-triggering: a looked-up image is ignored after the first run, a pinned one is not; any
    replacement deletes the old instance and its attachment first (no two GPUs, no VolumeInUse)."""
    instance = spot.one(INSTANCE)
    assert instance.ignore_changes == ["ami"]
    assert instance.delete_before_replace is True
    attachment = spot.one("aws:ec2/volumeAttachment:VolumeAttachment")
    assert attachment.delete_before_replace is True
    assert attachment.property_dependencies["instanceId"] == [instance.urn]
    pinned = render_experiment(experiment(image={"id": "ami-0123456789abcdef0"})).one(INSTANCE)
    assert pinned.ignore_changes == []
    assert pinned.delete_before_replace is True


def test_data_volume_encrypted_in_the_instance_zone_and_retained(spot) -> None:
    volume = spot.one(VOLUME)
    assert volume.inputs["encrypted"] is True
    assert volume.inputs["type"] == "gp3" and volume.inputs["size"] == 100
    assert volume.retain_on_delete is True and volume.protect is False
    assert volume.inputs["tags"][v.TAG_RETAIN] == "true"
    subnet_zone = spot.outputs["availabilityZone"]
    assert volume.inputs["availabilityZone"] == subnet_zone
    attach = spot.one("aws:ec2/volumeAttachment:VolumeAttachment")
    assert attach.inputs["volumeId"] == volume.id
    assert attach.inputs["instanceId"] == spot.one(INSTANCE).id
    assert attach.inputs["skipDestroy"] is True
    # The instance depends on the volume, so destroy terminates it before a non-retained disk is deleted.
    assert volume.urn in spot.one(INSTANCE).dependencies


def test_data_volume_not_retained_when_asked_and_performance_options() -> None:
    r = render_experiment(experiment(dataDisk={"sizeGb": 300, "retain": False, "iops": 6000, "throughput": 500}))
    volume = r.one(VOLUME)
    assert volume.retain_on_delete is False
    assert volume.inputs["tags"][v.TAG_RETAIN] == "false"
    assert (volume.inputs["size"], volume.inputs["iops"], volume.inputs["throughput"]) == (300, 6000, 500)


def test_existing_volume_is_reattached_not_managed() -> None:
    vol = "vol-0123456789abcdef0"
    mocks = CloudMocks(region="us-east-1", existing_volumes={vol: "us-east-1c"})
    r = render_experiment(experiment(dataDisk={"existingVolumeId": vol}), mocks=mocks)
    assert r.error is None, r.error
    assert r.of_type(VOLUME) == []
    assert r.one("aws:ec2/volumeAttachment:VolumeAttachment").inputs["volumeId"] == vol
    assert r.outputs["availabilityZone"] == "us-east-1c"
    assert r.one(INSTANCE).inputs["subnetId"] == _subnet_id("us-east-1c")


def test_large_gpu_types_go_to_a_zone_that_offers_them() -> None:
    r = render_experiment(experiment(gpu={"instanceType": "p5.48xlarge"}, budgetUsd=9000))
    assert r.error is None, r.error
    assert r.outputs["availabilityZone"] == "us-east-1b"  # the mocks offer p4/p5 only in b and c


def test_checkpoint_bucket_private_encrypted_versioned_tls_only(spot) -> None:
    bucket = spot.one(BUCKET)
    name = bucket.inputs["bucket"]
    assert name.startswith("gpulease-llm-finetune-exp1-") and len(name) <= 63
    assert bucket.retain_on_delete is True and bucket.inputs["forceDestroy"] is False
    pab = spot.one("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock").inputs
    assert all(pab[k] is True for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets"))
    sse = spot.one("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration").inputs
    # SSE-S3 alone: a bucket key only applies to SSE-KMS, so none is sent.
    assert sse["rules"] == [{"applyServerSideEncryptionByDefault": {"sseAlgorithm": "AES256"}}]
    versioning = spot.one("aws:s3/bucketVersioning:BucketVersioning").inputs
    assert versioning["versioningConfiguration"] == {"status": "Enabled"}
    policy = json.loads(spot.one("aws:s3/bucketPolicy:BucketPolicy").inputs["policy"])
    (deny,) = policy["Statement"]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert deny["Resource"] == [f"arn:aws:s3:::{name}", f"arn:aws:s3:::{name}/*"]
    assert spot.outputs["checkpointUri"] == f"s3://{name}/ckpt/"


def test_bucket_settings_apply_in_order_before_the_instance_starts(spot) -> None:
    """Each setting waits for the one before (block public access, encrypt, version, then lifecycle and the TLS
    policy), and the instance waits for all of them: no checkpoint lands in a half-configured bucket."""
    order = [
        BUCKET,
        "aws:s3/bucketOwnershipControls:BucketOwnershipControls",
        "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
        "aws:s3/bucketVersioning:BucketVersioning",
        "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
        "aws:s3/bucketPolicy:BucketPolicy",
    ]
    chain = [spot.one(t) for t in order]
    for earlier, later in itertools.pairwise(chain):
        assert earlier.urn in later.dependencies, f"{later.name} does not wait for {earlier.name}"
    assert {r.urn for r in chain} <= set(spot.one(INSTANCE).dependencies)


def test_the_bootstrap_bucket_is_hardened_in_the_same_order_before_the_tools_object() -> None:
    """The tools' own bucket (no checkpoint bucket of the stack's) gets the checkpoint bucket's chain, one setting
    after the other (S3 may refuse concurrent changes with 409 OperationAborted), and the tools object waits for
    all of it."""
    r = render_experiment(experiment(market="on-demand", onDemandReason="interactive debugging - no interruptions",
                                     checkpoints={"enabled": False}))
    assert r.error is None, r.error
    order = [
        BUCKET,
        "aws:s3/bucketOwnershipControls:BucketOwnershipControls",
        "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
        "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
        "aws:s3/bucketPolicy:BucketPolicy",
    ]
    chain = [r.one(t) for t in order]
    assert chain[0].name == "exp1-bootstrap" and not r.of_type("aws:s3/bucketVersioning:BucketVersioning")
    for earlier, later in itertools.pairwise(chain):
        assert earlier.urn in later.dependencies, f"{later.name} does not wait for {earlier.name}"
    assert {res.urn for res in chain} <= set(r.one("aws:s3/bucketObjectv2:BucketObjectv2").dependencies)


def test_lifecycle_rules_follow_the_spec() -> None:
    spec = experiment(
        checkpoints={
            "prefix": "runs/",
            "lifecycle": {
                "keepDays": 21,
                "noncurrentVersionsToKeep": 4,
                "noncurrentDays": 5,
                "abortIncompleteUploadDays": 3,
                "transitions": [{"days": 7, "storageClass": "INTELLIGENT_TIERING"}],
            },
        }
    )
    rules = render_experiment(spec).one("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration").inputs["rules"]
    main, markers = rules
    assert main["filter"] == {"prefix": "runs/"} and main["status"] == "Enabled"
    assert main["expiration"] == {"days": 21}
    assert main["noncurrentVersionExpiration"] == {"noncurrentDays": 5, "newerNoncurrentVersions": 4}
    assert main["abortIncompleteMultipartUpload"] == {"daysAfterInitiation": 3}
    assert main["transitions"] == [{"days": 7, "storageClass": "INTELLIGENT_TIERING"}]
    assert markers["expiration"] == {"expiredObjectDeleteMarker": True} and markers["filter"] == {"prefix": "runs/"}


def test_bucket_not_retained_when_asked() -> None:
    bucket = render_experiment(experiment(checkpoints={"retain": False})).one(BUCKET)
    assert bucket.retain_on_delete is False and bucket.inputs["forceDestroy"] is True


def test_existing_bucket_is_used_untouched() -> None:
    r = render_experiment(experiment(checkpoints={"bucket": "team-checkpoints", "prefix": "exp1/"}))
    assert r.error is None, r.error
    # Nothing touches team-checkpoints; the instance-side tools go to the stack's own bootstrap bucket instead.
    s3 = [res for res in r.resources if res.type.startswith("aws:s3/")]
    assert all(res.inputs.get("bucket") != "team-checkpoints" for res in s3)
    assert {res.inputs["bucket"] for res in s3 if res.type == BUCKET} == {"gpulease-boot-llm-finetune-exp1-org-unknown"}
    policy = json.loads(r.one(ROLE_POLICY).inputs["policy"]) if len(r.of_type(ROLE_POLICY)) == 1 else None
    policy = policy or json.loads(next(p for p in r.of_type(ROLE_POLICY) if p.name.endswith("checkpoint-access")).inputs["policy"])
    resources = {s["Sid"]: s["Resource"] for s in policy["Statement"]}
    assert resources["ReadWriteCheckpoints"] == "arn:aws:s3:::team-checkpoints/exp1/*"
    assert r.outputs["checkpointUri"] == "s3://team-checkpoints/exp1/"


def test_instance_role_least_privilege(spot) -> None:
    name = spot.one(BUCKET).inputs["bucket"]
    role = next(r for r in spot.of_type("aws:iam/role:Role") if r.name.endswith("instance-role"))
    trust = json.loads(role.inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "ec2.amazonaws.com"}
    policy = json.loads(next(p for p in spot.of_type(ROLE_POLICY) if p.name.endswith("checkpoint-access")).inputs["policy"])
    statements = {s["Sid"]: s for s in policy["Statement"]}
    assert statements["ListCheckpointPrefix"]["Action"] == "s3:ListBucket"
    assert statements["ListCheckpointPrefix"]["Resource"] == f"arn:aws:s3:::{name}"
    assert statements["ListCheckpointPrefix"]["Condition"] == {"StringLike": {"s3:prefix": ["ckpt/", "ckpt/*"]}}
    assert statements["ReadWriteCheckpoints"]["Resource"] == f"arn:aws:s3:::{name}/ckpt/*"
    assert set(statements["ReadWriteCheckpoints"]["Action"]) == {
        "s3:GetObject",
        "s3:PutObject",
        "s3:AbortMultipartUpload",
        "s3:ListMultipartUploadParts",
    }
    # The ready records: written (only) outside the prefix the checkpoint lifecycle expires; nothing else extra.
    assert statements["WriteReadyRecords"] == {"Sid": "WriteReadyRecords", "Effect": "Allow", "Action": "s3:PutObject",
                                               "Resource": f"arn:aws:s3:::{name}/_gpulease/ckpt/ready/*"}
    assert statements["WriteControlRecords"] == {"Sid": "WriteControlRecords", "Effect": "Allow",
                                                 "Action": "s3:PutObject",
                                                 "Resource": f"arn:aws:s3:::{name}/_gpulease/ckpt/control/*"}
    assert set(statements) == {"ListCheckpointPrefix", "LocateBucket", "ReadWriteCheckpoints", "WriteReadyRecords",
                               "WriteControlRecords"}
    for statement in policy["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        assert all(not a.endswith("*") for a in actions)
        assert statement["Resource"] != "*"
    assert spot.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment") == []


def test_deadline_schedule_terminates_exactly_this_instance(spot) -> None:
    schedule = terminating(spot).inputs
    instance = spot.one(INSTANCE)
    assert schedule["scheduleExpression"] == "at(2026-12-01T16:00:00)"
    assert schedule["scheduleExpressionTimezone"] == "UTC"
    assert schedule["flexibleTimeWindow"] == {"mode": "OFF"}
    assert schedule["actionAfterCompletion"] == "DELETE"
    assert schedule["target"]["arn"] == "arn:aws:scheduler:::aws-sdk:ec2:terminateInstances"
    assert json.loads(schedule["target"]["input"]) == {"InstanceIds": [instance.id]}
    role = next(r for r in spot.of_type("aws:iam/role:Role") if r.name.endswith("deadline-role"))
    assert schedule["target"]["roleArn"] == role.outputs["arn"]
    trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert trust["Condition"] == {"StringEquals": {"aws:SourceAccount": ACCOUNT_ID}}
    policy = json.loads(next(p for p in spot.of_type(ROLE_POLICY) if p.name.endswith("deadline-terminate")).inputs["policy"])
    assert policy["Statement"][0] == {
        "Sid": "TerminateThisInstance",
        "Effect": "Allow",
        "Action": "ec2:TerminateInstances",
        "Resource": f"arn:aws:ec2:us-east-1:{ACCOUNT_ID}:instance/{instance.id}",
    }
    # Opted out of recovery (a one-time request), terminating is all the role may do.
    one_time = render_experiment(experiment(spot={"recover": False}))
    policy = json.loads(one_time.by_name("exp1-deadline-terminate").inputs["policy"])
    assert [s["Action"] for s in policy["Statement"]] == ["ec2:TerminateInstances"]


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
        v.TAG_CHECKPOINT_URI: f"s3://{bucket}/ckpt/",
        v.TAG_MANAGED_BY: "gpulease",
    }
    taggable = [r for r in spot.custom_resources if is_taggable(r.type)]
    assert {r.type for r in taggable} >= {INSTANCE, VOLUME, BUCKET, INGRESS, "aws:iam/role:Role", "aws:ec2/keyPair:KeyPair"}
    objects = set(rt.AWS_BUCKET_OBJECTS)
    for resource in taggable:
        tags = resource.inputs.get("tags") or {}
        # An S3 object takes at most ten tags: the kit's objects carry the ones saying whose they are.
        want = {k: val for k, val in expected.items() if resource.type not in objects or k in OBJECT_TAG_KEYS}
        missing = {k: val for k, val in want.items() if tags.get(k) != val}
        assert not missing, f"{resource.type} {resource.name} lacks {missing}"
        if resource.type in objects:
            assert len(tags) <= 10 and tags[v.TAG_STACK] == "test", resource.name
    assert spot.one(INSTANCE).inputs["rootBlockDevice"]["tags"][v.TAG_EXPIRES_AT] == DEADLINE


def test_outputs(spot) -> None:
    instance = spot.one(INSTANCE)
    out = spot.outputs
    assert out["instanceId"] == instance.id
    assert out["publicIp"] == instance.outputs["publicIp"]
    assert out["sshCommand"] == f"ssh ubuntu@{instance.outputs['publicIp']}"
    assert out["dataVolumeId"] == spot.one(VOLUME).id
    assert out["bucket"] == spot.one(BUCKET).inputs["bucket"]
    assert out["deadline"] == DEADLINE
    assert out["experiments"]["exp1"]["instanceType"] == "g5.xlarge"


def test_user_data_carries_the_spec_settings(spot) -> None:
    text = user_data_text(spot.one(INSTANCE))
    assert DEADLINE not in text  # the watchdog reads the deadline from the instance's tag: a renewal changes no user-data
    assert spot.one(VOLUME).id in text
    assert "AKIA" not in text and "PRIVATE KEY" not in text


def test_deadline_is_recorded_once_and_survives_a_second_run() -> None:
    first = render_experiment(experiment())
    (static,) = deadline_records(first)
    assert static.ignore_changes == ["rfc3339"]
    assert static.inputs["rfc3339"] == DEADLINE
    later = FIXED_NOW + timedelta(hours=3)
    second = render_experiment(experiment(), now=later, prior=first)
    assert second.error is None, second.error
    assert second.outputs["deadline"] == DEADLINE
    assert terminating(second).inputs["scheduleExpression"] == "at(2026-12-01T16:00:00)"
    assert second.one(INSTANCE).inputs["tags"][v.TAG_EXPIRES_AT] == DEADLINE
    # Without the recorded state the same program would have pushed the deadline out by three hours.
    fresh = render_experiment(experiment(), now=later)
    assert fresh.outputs["deadline"] == "2026-12-01T19:00:00Z"


def test_renewal_records_a_new_deadline_and_a_passed_one_stops_the_update() -> None:
    first = render_experiment(experiment())
    after = FIXED_NOW + timedelta(hours=9)
    expired = render_experiment(experiment(), now=after, prior=first)
    assert expired.error and "has passed" in expired.error and "deadlineRenewal" in expired.error
    renewed = render_experiment(experiment(deadlineRenewal=1), now=after, prior=first)
    assert renewed.error is None, renewed.error
    assert renewed.outputs["deadline"] == "2026-12-02T01:00:00Z"
    assert [x.name for x in deadline_records(renewed)] == ["exp1-deadline-r1"]


def test_explicit_expires_at_is_used_as_is() -> None:
    r = render_experiment(experiment(expiresAt="2026-12-01T12:30:00Z"))
    assert deadline_records(r) == []
    assert r.outputs["deadline"] == "2026-12-01T12:30:00Z"
    assert terminating(r).inputs["scheduleExpression"] == "at(2026-12-01T12:30:00)"


def test_invalid_spec_registers_nothing() -> None:
    r = render_experiment(experiment(ssh={"allowedCidrs": ["0.0.0.0/0"], "keyName": "k"}), stack="bad")
    assert r.resources == []
    assert "stack 'bad'" in r.error and "gpulease:experiment.ssh.allowedCidrs" in r.error


def test_unknown_type_or_unfit_requirement_registers_nothing() -> None:
    r = render_experiment(experiment(gpu={"instanceType": "g5.96xlarge"}), stack="typo")
    assert r.resources == []
    assert "stack 'typo'" in r.error and "gpulease:experiment.gpu.instanceType" in r.error and "g5.xlarge" in r.error
    r = render_experiment(experiment(gpu={"gpuMemoryGb": 24, "count": 3}), stack="odd")
    assert r.resources == []
    assert "stack 'odd'" in r.error and "gpulease:experiment.gpu" in r.error


def test_region_from_the_spec_gets_its_own_provider() -> None:
    r = render_experiment(experiment(region="us-west-2"))
    assert r.error is None, r.error
    (provider,) = r.of_type("pulumi:providers:aws")
    assert provider.inputs["region"] == "us-west-2"
    assert r.one(INSTANCE).provider.startswith(provider.urn)
    assert r.outputs["availabilityZone"].startswith("us-west-2")


def test_sweep_shares_network_and_bucket_and_splits_the_rest() -> None:
    from gpulease.review.render import render

    base = experiment(name="sw")
    config = {
        "aws:region": "us-east-1",
        "gpulease:sweep": {
            "base": base,
            "runs": [{"name": "a"}, {"name": "b", "overrides": {"gpu": {"gpuMemoryGb": 48}, "maxRuntimeHours": 10}}],
        },
    }
    r = render(config, stack="sweep", now=FIXED_NOW)
    assert r.error is None, r.error
    assert len(r.of_type("aws:ec2/securityGroup:SecurityGroup")) == 1
    assert len(r.of_type(BUCKET)) == 1
    instances = {i.name: i for i in r.of_type(INSTANCE)}
    assert set(instances) == {"sw-a-instance", "sw-b-instance"}
    assert instances["sw-b-instance"].inputs["instanceType"] == "g6e.xlarge"
    assert len(r.of_type(VOLUME)) == 2 and len(r.of_type(SCHEDULE)) == 4
    bucket = r.one(BUCKET).inputs["bucket"]
    assert r.outputs["experiments"]["sw-a"]["checkpointUri"] == f"s3://{bucket}/ckpt/sw-a/"
    policies = {p.name: json.loads(p.inputs["policy"]) for p in r.of_type(ROLE_POLICY) if p.name.endswith("checkpoint-access")}
    for run in ("sw-a", "sw-b"):
        rw = next(s for s in policies[f"{run}-checkpoint-access"]["Statement"] if s["Sid"] == "ReadWriteCheckpoints")
        assert rw["Resource"] == f"arn:aws:s3:::{bucket}/ckpt/{run}/*"
    # Shared resources expire with the last run.
    assert r.one(BUCKET).inputs["tags"][v.TAG_EXPIRES_AT] == "2026-12-01T18:00:00Z"
    assert instances["sw-a-instance"].inputs["tags"][v.TAG_EXPIRES_AT] == DEADLINE
