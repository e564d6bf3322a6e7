"""The same spec on AWS and on Alibaba Cloud gives the same guarantees.

Each guarantee is read out of both clouds' registered resources into one cloud-neutral form and compared.
A guarantee one cloud cannot give is declared in that cloud's ``capabilities`` (``components/<cloud>/cloud.py``, with
the reason); the documentation's clouds table is rendered from those tables and must be the one the docs show.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime

import pytest

from components import cloud as contract
from components import experiment as facade
from components.experiment import CLOUDS
from components.spec.clouds import SPEC_RULES
from gpulease.core import resources as rt
from gpulease.core import vocabulary as v
from gpulease.review.render import Rendering, render
from policies.guardrails.taggable import is_taggable
from tests.support.clock import FIXED_NOW
from tests.support.paths import ROOT
from tests.support.specs import experiment

LIFECYCLE = {
    "keepDays": 21,
    "noncurrentDays": 5,
    "abortIncompleteUploadDays": 3,
}


def spec_for(cloud: str, **overrides) -> dict:
    """One spec; only the cloud-specific fields differ (cloud, storage class names). Spot recovery is built per
    cloud (docs/clouds.md#spot-recovery): the shared spot facts are compared with it off unless a test asks."""
    overrides.setdefault("spot", {"recover": False})
    storage_class = {"aws": "INTELLIGENT_TIERING", "alicloud": "IA"}[cloud]
    checkpoints = {"prefix": "ckpt/", "lifecycle": {**LIFECYCLE, "transitions": [{"days": 7, "storageClass": storage_class}]}}
    checkpoints.update(overrides.pop("checkpoints", {}))
    return experiment(cloud=cloud, gpu={"gpuMemoryGb": 24, "count": 1}, checkpoints=checkpoints, **overrides)


def render_on(cloud: str, **overrides) -> Rendering:
    region_key, region = {"aws": ("aws:region", "us-east-1"), "alicloud": ("alicloud:region", "cn-hangzhou")}[cloud]
    r = render({region_key: region, "gpulease:experiment": spec_for(cloud, **overrides)}, stack="parity", now=FIXED_NOW)
    assert r.error is None, f"{cloud}: {r.error}"
    return r


@pytest.fixture(scope="module")
def both() -> dict[str, Rendering]:
    return {cloud: render_on(cloud) for cloud in ("aws", "alicloud")}


# --- how each cloud expresses each guarantee, read back into one form ------------------------------------


def ssh_scope(cloud: str, r: Rendering) -> set[tuple[str, str, int, int]]:
    if cloud == "aws":
        rules = r.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
        return {(x.inputs.get("cidrIpv4") or x.inputs.get("cidrIpv6"), x.inputs["ipProtocol"], x.inputs["fromPort"], x.inputs["toPort"]) for x in rules}
    rules = [x for x in r.of_type("alicloud:ecs/securityGroupRule:SecurityGroupRule") if x.inputs["type"] == "ingress"]
    out = set()
    for x in rules:
        low, high = (int(p) for p in x.inputs["portRange"].split("/"))
        out.add((x.inputs.get("cidrIp") or x.inputs.get("ipv6CidrIp"), x.inputs["ipProtocol"], low, high))
    return out


def spot(cloud: str, r: Rendering) -> dict:
    if cloud == "aws":
        inputs = r.one("aws:ec2/instance:Instance").inputs
        market = inputs.get("instanceMarketOptions")
        if not market:
            return {"spot": False}
        options = market["spotOptions"]
        return {
            "spot": market["marketType"] == "spot",
            "on_interruption": {"terminate": "release", "stop": "stop"}.get(options["instanceInterruptionBehavior"]),
            "max_price": float(options["maxPrice"]) if "maxPrice" in options else None,
        }
    inputs = r.one("alicloud:ecs/instance:Instance").inputs
    assert inputs["instanceChargeType"] == "PostPaid"
    if inputs["spotStrategy"] == "NoSpot":
        return {"spot": False}
    return {
        "spot": inputs["spotStrategy"] in ("SpotAsPriceGo", "SpotWithPriceLimit"),
        "on_interruption": {"Terminate": "release", "Stop": "stop"}.get(inputs["spotInterruptionBehavior"]),
        "max_price": inputs.get("spotPriceLimit") if inputs["spotStrategy"] == "SpotWithPriceLimit" else None,
    }


def spot_recovery(cloud: str, r: Rendering) -> dict[str, bool]:
    """Whether a reclaim keeps the instance (stopped, its disks kept), and whether the cloud starts it again by
    itself (AWS, a persistent request; never on Alibaba Cloud: ``gpulease resume``)."""
    if cloud == "aws":
        options = (r.one("aws:ec2/instance:Instance").inputs.get("instanceMarketOptions") or {}).get("spotOptions") or {}
        kept = options.get("spotInstanceType") == "persistent" and options.get("instanceInterruptionBehavior") == "stop"
        return {"kept_on_reclaim": kept, "restarted_by_the_cloud": kept}
    kept = r.one("alicloud:ecs/instance:Instance").inputs.get("spotInterruptionBehavior") == "Stop"
    return {"kept_on_reclaim": kept, "restarted_by_the_cloud": False}


def external_deadline(cloud: str, r: Rendering) -> datetime:
    """The moment a timer outside the instance ends it."""
    if cloud == "aws":
        expression = r.one("aws:scheduler/schedule:Schedule").inputs["scheduleExpression"]
        return datetime.fromisoformat(re.fullmatch(r"at\((.+)\)", expression).group(1) + "+00:00")
    return v.parse_rfc3339(r.one("alicloud:ecs/instance:Instance").inputs["autoReleaseTime"])


def encryption(cloud: str, r: Rendering) -> dict:
    if cloud == "aws":
        instance = r.one("aws:ec2/instance:Instance").inputs
        sse = r.one("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration").inputs
        tls = json.loads(r.one("aws:s3/bucketPolicy:BucketPolicy").inputs["policy"])["Statement"][0]
        return {
            "root": instance["rootBlockDevice"]["encrypted"],
            "data": r.one("aws:ebs/volume:Volume").inputs["encrypted"],
            "bucket": sse["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"],
            "tls_only": tls["Effect"] == "Deny" and "aws:SecureTransport" in json.dumps(tls["Condition"]),
        }
    instance = r.one("alicloud:ecs/instance:Instance").inputs
    tls = json.loads(r.one("alicloud:oss/bucketPolicy:BucketPolicy").inputs["policy"])["Statement"][0]
    return {
        "root": instance["systemDiskEncrypted"],
        "data": r.one("alicloud:ecs/ecsDisk:EcsDisk").inputs["encrypted"],
        "bucket": r.one("alicloud:oss/bucket:Bucket").inputs["serverSideEncryptionRule"]["sseAlgorithm"],
        "tls_only": tls["Effect"] == "Deny" and "acs:SecureTransport" in json.dumps(tls["Condition"]),
    }


def retention(cloud: str, r: Rendering) -> dict:
    names = {
        "aws": ("aws:ebs/volume:Volume", "aws:s3/bucket:Bucket", "aws:ec2/volumeAttachment:VolumeAttachment"),
        "alicloud": ("alicloud:ecs/ecsDisk:EcsDisk", "alicloud:oss/bucket:Bucket", "alicloud:ecs/ecsDiskAttachment:EcsDiskAttachment"),
    }[cloud]
    disk, bucket, attachment = (r.one(t) for t in names)
    never_force_detached = attachment.inputs.get("skipDestroy") is True if cloud == "aws" else attachment.retain_on_delete
    disk_outlives_instance = True if cloud == "aws" else disk.inputs["deleteWithInstance"] is False
    return {
        "disk": disk.retain_on_delete and not disk.protect,
        "bucket": bucket.retain_on_delete and bucket.inputs["forceDestroy"] is False,
        "disk_tag": disk.inputs["tags"][v.TAG_RETAIN],
        "bucket_tag": bucket.inputs["tags"][v.TAG_RETAIN],
        "never_force_detached": never_force_detached,
        "disk_outlives_instance": disk_outlives_instance,
    }


def lifecycle(cloud: str, r: Rendering) -> dict:
    if cloud == "aws":
        main, markers = r.one("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration").inputs["rules"]
        return {
            "prefix": main["filter"]["prefix"],
            "expire_days": main["expiration"]["days"],
            "noncurrent_days": main["noncurrentVersionExpiration"]["noncurrentDays"],
            "noncurrent_versions_kept": main["noncurrentVersionExpiration"].get("newerNoncurrentVersions"),
            "abort_upload_days": main["abortIncompleteMultipartUpload"]["daysAfterInitiation"],
            "transition_days": [t["days"] for t in main.get("transitions", [])],
            "delete_markers_cleaned": markers["expiration"] == {"expiredObjectDeleteMarker": True} and markers["filter"] == main["filter"],
            "versioned": r.one("aws:s3/bucketVersioning:BucketVersioning").inputs["versioningConfiguration"]["status"] == "Enabled",
        }
    bucket = r.one("alicloud:oss/bucket:Bucket").inputs
    main, markers = bucket["lifecycleRules"]
    return {
        "prefix": main["prefix"],
        "expire_days": main["expirations"][0]["days"],
        "noncurrent_days": main["noncurrentVersionExpirations"][0]["days"],
        "noncurrent_versions_kept": None,  # OSS has no such setting
        "abort_upload_days": main["abortMultipartUploads"][0]["days"],
        "transition_days": [t["days"] for t in main.get("transitions", [])],
        "delete_markers_cleaned": markers["expirations"] == [{"expiredObjectDeleteMarker": True}] and markers["prefix"] == main["prefix"],
        "versioned": bucket["versioning"] == {"status": "Enabled"},
    }


def tags(cloud: str, r: Rendering) -> dict:
    """The instance's tags, the storage URI's scheme set aside, and whether every taggable resource has them all."""
    instance = r.one({"aws": "aws:ec2/instance:Instance", "alicloud": "alicloud:ecs/instance:Instance"}[cloud])
    base = dict(instance.inputs["tags"])
    base[v.TAG_CHECKPOINT_URI] = base[v.TAG_CHECKPOINT_URI].split("://", 1)[1]
    # Each cloud's own instance type has its own price: the tag is there, and a price, on both.
    hourly = float(base.pop(v.TAG_MAX_HOURLY_USD))
    base[v.TAG_MAX_HOURLY_USD] = hourly > 0
    # An object in a bucket is billed as its bucket's storage and takes at most ten tags on S3 (the pack demands
    # none on objects either): the accounting tags are checked on everything else.
    taggable = [x for x in r.custom_resources if is_taggable(x.type) and x.type not in rt.BUCKET_OBJECT_TYPES]
    complete = all(
        all((x.inputs.get("tags") or {}).get(k) is not None for k in v.REQUIRED_TAGS) for x in taggable
    )
    return {"instance": base, "every_taggable_resource_complete": complete and len(taggable) >= 6}


_VERBS = {
    "s3:GetObject": "read", "oss:GetObject": "read",
    "s3:PutObject": "write", "oss:PutObject": "write",
    "s3:AbortMultipartUpload": "abort-upload", "oss:AbortMultipartUpload": "abort-upload",
    "s3:ListMultipartUploadParts": "list-parts", "oss:ListParts": "list-parts",
    "s3:ListBucket": "list", "oss:ListObjects": "list",
    "s3:GetBucketLocation": "locate", "oss:GetBucketLocation": "locate", "oss:GetBucketInfo": "locate",
}


def _resource_path(arn: str) -> str:
    """``arn:aws:s3:::b/p*`` and ``acs:oss:*:123:b/p*`` both become ``b/p*``."""
    return arn.split(":::", 1)[1] if arn.startswith("arn:") else arn.split(":", 4)[4]


def storage_access(cloud: str, r: Rendering) -> dict:
    if cloud == "aws":
        policy = json.loads(next(p for p in r.of_type("aws:iam/rolePolicy:RolePolicy") if p.name.endswith("checkpoint-access")).inputs["policy"])
        prefix_key = "s3:prefix"
    else:
        policy = json.loads(r.by_name("exp1-checkpoint-access").inputs["policyDocument"])
        prefix_key = "oss:Prefix"
    grants: dict[str, set[str]] = {}
    list_condition = None
    wildcard = False
    for statement in policy["Statement"]:
        assert statement["Effect"] == "Allow"
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        wildcard |= any(a.endswith("*") for a in actions) or any(res in ("*", "acs:oss:*:*:*") for res in resources)
        for action in actions:
            grants.setdefault(_VERBS[action], set()).update(_resource_path(res) for res in resources)
        if "Condition" in statement:
            list_condition = statement["Condition"]["StringLike"][prefix_key]
    return {"grants": grants, "list_only_under": list_condition, "wildcard": wildcard}


def shutdown_from_inside(cloud: str, r: Rendering) -> str | None:
    """What an OS shutdown (watchdog, idle GPU) does to billing; None when the cloud offers no setting for it."""
    if cloud == "aws":
        return r.one("aws:ec2/instance:Instance").inputs["instanceInitiatedShutdownBehavior"]
    return None


def replacement(cloud: str, r: Rendering) -> dict:
    """How an update may replace the instance: only delete-before-replace, with its disk attachment, never for a
    newer family image; and no checkpoint before the bucket's settings are all in place."""
    instance = r.one("aws:ec2/instance:Instance" if cloud == "aws" else "alicloud:ecs/instance:Instance")
    attachment = r.one("aws:ec2/volumeAttachment:VolumeAttachment" if cloud == "aws"
                       else "alicloud:ecs/ecsDiskAttachment:EcsDiskAttachment")
    bucket_parts = [x for x in r.resources if x.type.split(":")[1].startswith(("s3/", "oss/"))]
    return {
        "instance_delete_before_replace": instance.delete_before_replace,
        "attachment_delete_before_replace": attachment.delete_before_replace,
        "attachment_follows_instance": attachment.property_dependencies.get("instanceId") == [instance.urn],
        "family_image_ignored": (instance.ignore_changes or [None])[0] == ("ami" if cloud == "aws" else "imageId"),
        "bucket_ready_before_instance": {x.urn for x in bucket_parts} <= set(instance.dependencies),
    }


GUARANTEES: dict[str, Callable[[str, Rendering], object]] = {
    "ssh scope": ssh_scope,
    "spot": spot,
    "spot recovery": spot_recovery,
    "deadline": external_deadline,
    "encryption": encryption,
    "retention": retention,
    "lifecycle": lifecycle,
    "tags": tags,
    "least-privilege storage access": storage_access,
    "replacement": replacement,
}

# A guarantee one cloud does not give (``Support.given`` False) -> the fact, read above, in which the clouds differ:
# (the reader, the key in its facts). Everything else must be equal.
DIFFERING_FACTS: dict[str, tuple[str, str]] = {
    "noncurrent-versions-kept": ("lifecycle", "noncurrent_versions_kept"),
    "shutdown-from-inside": ("shutdown from inside", ""),
    "budget-alerts": ("budget alerts", ""),
    "spot-recovery": ("spot recovery", "restarted_by_the_cloud"),
}
GAPS = {reader: key for reader, key in DIFFERING_FACTS.values()}


def implementations() -> dict[str, contract.Cloud]:
    return {name: facade.cloud(name) for name in CLOUDS}


def test_the_cloud_registries_agree() -> None:
    """The program's registry and the spec's list name the same clouds, each implementation under its own name
    and with the spec rules of its folder."""
    assert list(CLOUDS) == list(SPEC_RULES)
    for name, impl in implementations().items():
        assert impl.name == name and impl.spec is SPEC_RULES[name]


def test_the_differing_facts_are_the_gaps_the_clouds_declare() -> None:
    impls = implementations()
    declared = {g.key for g in contract.GUARANTEES for impl in impls.values() if not impl.capabilities[g.key].given}
    assert set(DIFFERING_FACTS) == declared
    for impl in impls.values():
        assert set(impl.capabilities) == {g.key for g in contract.GUARANTEES}, impl.name
        for key, support in impl.capabilities.items():
            assert support.given or (support.gap and len(support.gap) > 20), f"{impl.name} {key}: a gap says why"


@pytest.mark.parametrize("guarantee", sorted(GUARANTEES))
def test_same_guarantee_on_both_clouds(both, guarantee: str) -> None:
    read = GUARANTEES[guarantee]
    aws, ali = read("aws", both["aws"]), read("alicloud", both["alicloud"])
    differs = GAPS.get(guarantee)
    if differs and isinstance(aws, dict):
        aws = {k: val for k, val in aws.items() if k != differs}
        ali = {k: val for k, val in ali.items() if k != differs}
    assert aws == ali, f"{guarantee}: AWS {aws} != Alibaba Cloud {ali}"


def test_the_guarantees_are_the_spec_not_just_equal(both) -> None:
    """Equal could mean equally wrong: check the shared facts against the spec itself."""
    facts = {name: read("alicloud", both["alicloud"]) for name, read in GUARANTEES.items()}
    assert facts["ssh scope"] == {("203.0.113.7/32", "tcp", 22, 22), ("2001:db8:1234::/48", "tcp", 22, 22)}
    assert facts["spot"] == {"spot": True, "on_interruption": "release", "max_price": None}
    assert facts["deadline"] == v.parse_rfc3339(both["alicloud"].outputs["deadline"]) == v.parse_rfc3339("2026-12-01T16:00:00Z")
    assert facts["encryption"] == {"root": True, "data": True, "bucket": "AES256", "tls_only": True}
    assert facts["retention"] == {
        "disk": True, "bucket": True, "disk_tag": "true", "bucket_tag": "true",
        "never_force_detached": True, "disk_outlives_instance": True,
    }
    lc = facts["lifecycle"]
    assert (lc["prefix"], lc["expire_days"], lc["noncurrent_days"], lc["abort_upload_days"], lc["transition_days"]) == ("ckpt/", 21, 5, 3, [7])
    assert lc["delete_markers_cleaned"] and lc["versioned"]
    assert facts["tags"]["every_taggable_resource_complete"]
    assert facts["replacement"] == dict.fromkeys(facts["replacement"], True) and len(facts["replacement"]) == 5
    access = facts["least-privilege storage access"]
    bucket = both["alicloud"].outputs["bucket"]
    assert access["wildcard"] is False
    assert access["list_only_under"] == ["ckpt/", "ckpt/*"]
    for verb in ("abort-upload", "list-parts"):
        assert access["grants"][verb] == {f"{bucket}/ckpt/*"}
    # Beyond the prefix only the kit's own records, which the checkpoint lifecycle must not expire: the instance writes
    # its ready records there and reads its one tools bundle (components/image_bake.record_folder).
    assert access["grants"]["write"] == {f"{bucket}/ckpt/*", f"{bucket}/_gpulease/ckpt/ready/*",
                                               f"{bucket}/_gpulease/ckpt/control/*"}
    assert {g for g in access["grants"]["read"] if g != f"{bucket}/ckpt/*"} <= {
        g for g in access["grants"]["read"] if g.startswith(f"{bucket}/_gpulease/ckpt/tools/")}
    assert access["grants"]["list"] == {bucket}
    assert both["aws"].outputs["bucket"] == bucket  # same stack, same name on both clouds


@pytest.mark.parametrize(
    ("overrides", "guarantee", "expected"),
    [
        ({"ssh": {"mode": "ssm"}}, "ssh scope", set()),
        ({"maxSpotPriceUsd": 0.9}, "spot", {"spot": True, "on_interruption": "release", "max_price": 0.9}),
        ({"market": "on-demand", "onDemandReason": "interactive profiling - no interruptions"}, "spot", {"spot": False}),
        ({"expiresAt": "2026-12-01T12:30:00Z"}, "deadline", v.parse_rfc3339("2026-12-01T12:30:00Z")),
    ],
)
def test_variants_keep_parity(overrides: dict, guarantee: str, expected: object) -> None:
    read = GUARANTEES[guarantee]
    ali_overrides = dict(overrides)
    if overrides.get("ssh", {}).get("mode") == "ssm":
        ali_overrides["ssh"] = {"mode": "cloud-assistant"}  # the cloud-specific name of "no inbound at all"
    assert read("aws", render_on("aws", **overrides)) == expected
    assert read("alicloud", render_on("alicloud", **ali_overrides)) == expected


def test_retention_off_is_honoured_on_both() -> None:
    overrides = {"dataDisk": {"retain": False}, "checkpoints": {"retain": False}}
    for cloud in ("aws", "alicloud"):
        facts = retention(cloud, render_on(cloud, **dict(overrides)))
        assert (facts["disk"], facts["bucket"], facts["disk_tag"], facts["bucket_tag"]) == (False, False, "false", "false"), cloud


def test_gaps_differ_as_declared(both) -> None:
    assert lifecycle("aws", both["aws"])["noncurrent_versions_kept"] == 3
    assert lifecycle("alicloud", both["alicloud"])["noncurrent_versions_kept"] is None
    assert shutdown_from_inside("aws", both["aws"]) == "terminate"
    assert shutdown_from_inside("alicloud", both["alicloud"]) is None


def test_the_documented_clouds_table_is_the_one_the_code_declares() -> None:
    """The clouds table (how each cloud gives each guarantee, and why not) is rendered from the clouds'
    ``capabilities``; the documentation (the README or a page of docs/) shows exactly that table."""
    table = contract.capability_table(implementations())
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert any(table in page.read_text() for page in pages), (
        "no page of the documentation shows the clouds table as the code declares it; paste this:\n" + table
    )
    for guarantee in contract.GUARANTEES:
        assert f"| {guarantee.title} |" in table
