"""encrypted-storage, bucket-public-access-blocked, bucket-lifecycle-required and data-disk-retained."""

from __future__ import annotations

from gpulease.core import vocabulary as v
from tests.support.policy import (
    ALI_INSTANCE,
    AWS_BUCKET,
    AWS_INSTANCE,
    ali_checkpoint_bucket,
    ali_gpu,
    analyze,
    aws_gpu,
    aws_schedule_for,
    checkpoint_bucket,
    found,
    res,
    tags,
)

VOLUME = "aws:ebs/volume:Volume"
ALI_DISK = "alicloud:ecs/ecsDisk:EcsDisk"


def volume(name: str = "data", **changes) -> dict:
    return {"availabilityZone": "us-east-1a", "size": 100, "type": "gp3", "encrypted": True,
            "tags": tags(retain="true"), **changes}


def test_unencrypted_volume_root_and_block_devices():
    gpu = aws_gpu(rootBlockDevice={"volumeSize": 100}, ebsBlockDevices=[
        {"deviceName": "/dev/sdg", "volumeSize": 50, "encrypted": False, "deleteOnTermination": False}])
    result = analyze(res(AWS_INSTANCE, "gpu", gpu), aws_schedule_for("gpu"), *checkpoint_bucket(),
                     res(VOLUME, "data", volume(encrypted=False), retain_on_delete=True))
    assert sorted(found(result, "encrypted-storage")) == [
        ("encrypted-storage", "mandatory", "data", "Volume 'data': the volume is not encrypted"),
        ("encrypted-storage", "mandatory", "gpu",
         "Instance 'gpu': the root block device is not encrypted; ebsBlockDevices[0] (/dev/sdg) is not encrypted"),
    ]


def test_customer_key_required_by_config():
    config = {"encrypted-storage": {"requireCustomerKey": True}}
    result = analyze(res(VOLUME, "data", volume(), retain_on_delete=True), config=config)
    assert found(result, "encrypted-storage") == [
        ("encrypted-storage", "mandatory", "data",
         "Volume 'data': the volume is encrypted with the default key, not a customer-managed key")
    ]
    keyed = volume(kmsKeyId="arn:aws:kms:us-east-1:123456789012:key/abc")
    assert found(analyze(res(VOLUME, "data", keyed, retain_on_delete=True), config=config), "encrypted-storage") == []


def test_alicloud_disks_and_bucket_encryption():
    bucket, pab = ali_checkpoint_bucket()
    bucket.inputs = {k: val for k, val in bucket.inputs.items() if k != "serverSideEncryptionRule"}
    bucket.outputs = dict(bucket.inputs)
    result = analyze(
        res(ALI_INSTANCE, "gpu", ali_gpu(systemDiskEncrypted=False, dataDisks=[{"size": 100, "encrypted": True,
                                                                                "deleteWithInstance": False}])),
        res(ALI_DISK, "disk", {"size": 200, "category": "cloud_essd", "tags": tags(retain="true")},
            retain_on_delete=True),
        bucket, pab,
    )
    assert sorted(found(result, "encrypted-storage")) == [
        ("encrypted-storage", "mandatory", "ali-ckpt",
         "Bucket 'ali-ckpt' has no server-side encryption (serverSideEncryptionRule or a BucketServerSideEncryption "
         "resource)"),
        ("encrypted-storage", "mandatory", "disk", "EcsDisk 'disk': the disk is not encrypted"),
        ("encrypted-storage", "mandatory", "gpu", "Instance 'gpu': the system disk is not encrypted"),
    ]


def test_bucket_without_public_access_block_and_with_public_acl():
    bucket = res(AWS_BUCKET, "pub", {"bucket": "pub", "acl": "public-read", "tags": tags(retain="true"),
                                     "lifecycleRules": [{"enabled": True, "expiration": {"days": 30}}]},
                 retain_on_delete=True)
    assert found(analyze(bucket), "bucket-public-access-blocked") == [
        ("bucket-public-access-blocked", "mandatory", "pub", "Bucket 'pub' is public: acl=public-read; accepted: private"),
        ("bucket-public-access-blocked", "mandatory", "pub",
         "Bucket 'pub' has no public access block; accepted: a BucketPublicAccessBlock for it in the stack"),
    ]


def test_a_bucket_registered_under_its_earlier_name_is_judged_like_a_bucket():
    """``aws.s3.BucketV2`` (the same bucket resource under pulumi_aws's earlier name) is priced by the cost model and
    judged by the pack alike: both read the one list of bucket types (gpulease.core.resources.BUCKET_TYPES)."""
    bucket = res("aws:s3/bucketV2:BucketV2", "old", {"bucket": "old", "tags": tags(retain="true")}, retain_on_delete=True)
    assert found(analyze(bucket), "bucket-public-access-blocked") == [
        ("bucket-public-access-blocked", "mandatory", "old",
         "BucketV2 'old' has no public access block; accepted: a BucketPublicAccessBlock for it in the stack"),
    ]
    assert [h[2] for h in found(analyze(bucket), "bucket-lifecycle-required")] == ["old"]
    pab = res("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", "old-pab",
              {"bucket": "old", "blockPublicAcls": True, "blockPublicPolicy": True, "ignorePublicAcls": True,
               "restrictPublicBuckets": True})
    assert found(analyze(bucket, pab), "bucket-public-access-blocked") == []


def test_partial_public_access_block_names_the_missing_flags():
    parts = checkpoint_bucket()
    pab = parts[1]
    pab.inputs = {**pab.inputs, "restrictPublicBuckets": False, "ignorePublicAcls": False}
    pab.outputs = dict(pab.inputs)
    (hit,) = found(analyze(*parts), "bucket-public-access-blocked")
    # A block exists with two flags off: the finding says so and names them, never "has no public access block".
    assert hit[3] == ("Bucket 'ckpt-bucket' has a public access block with ignorePublicAcls, restrictPublicBuckets "
                      "off; accepted: all four flags true")


def test_account_level_block_and_public_bucket_acl_resource():
    bucket = res(AWS_BUCKET, "b", {"bucket": "b", "tags": tags(retain="true"),
                                   "lifecycleRules": [{"enabled": True}]}, retain_on_delete=True)
    account = res("aws:s3/accountPublicAccessBlock:AccountPublicAccessBlock", "acct",
                  {"blockPublicAcls": True, "blockPublicPolicy": True, "ignorePublicAcls": True,
                   "restrictPublicBuckets": True})
    assert found(analyze(bucket, account), "bucket-public-access-blocked") == []
    acl = res("aws:s3/bucketAcl:BucketAcl", "b-acl", {"bucket": "b", "acl": "public-read-write"})
    assert found(analyze(bucket, account, acl), "bucket-public-access-blocked") == [
        ("bucket-public-access-blocked", "mandatory", "b",
         "Bucket 'b' is public: BucketAcl 'b-acl' acl=public-read-write; accepted: private")
    ]


def test_alicloud_public_bucket():
    bucket, _ = ali_checkpoint_bucket()
    bucket.inputs = {**bucket.inputs, "acl": "public-read"}
    bucket.outputs = dict(bucket.inputs)
    assert found(analyze(bucket), "bucket-public-access-blocked") == [
        ("bucket-public-access-blocked", "mandatory", "ali-ckpt",
         "Bucket 'ali-ckpt' is public: acl=public-read; accepted: private"),
        ("bucket-public-access-blocked", "mandatory", "ali-ckpt",
         "Bucket 'ali-ckpt' has no public access block; accepted: a BucketPublicAccessBlock with "
         "blockPublicAccess=true for it in the stack"),
    ]


def test_bucket_lifecycle_is_advisory():
    parts = [r for r in checkpoint_bucket() if "Lifecycle" not in r.type]
    assert found(analyze(*parts), "bucket-lifecycle-required") == [
        ("bucket-lifecycle-required", "advisory", "ckpt-bucket",
         "Bucket 'ckpt-bucket' has no enabled lifecycle rule: old checkpoints and noncurrent versions are kept "
         "(and billed) forever")
    ]
    disabled = checkpoint_bucket()
    disabled[3].inputs = {**disabled[3].inputs, "rules": [{"id": "x", "status": "Disabled"}]}
    disabled[3].outputs = dict(disabled[3].inputs)
    assert [h[2] for h in found(analyze(*disabled), "bucket-lifecycle-required")] == ["ckpt-bucket"]


def test_data_disk_retention():
    retained = res(VOLUME, "kept", volume(), retain_on_delete=True)
    protected = res(VOLUME, "locked", volume(tags=tags()), protect=True)
    opted_out = res(VOLUME, "scratch", volume(tags=tags(retain="false")))
    lost = res(VOLUME, "lost", volume(tags=tags()))
    result = analyze(retained, protected, opted_out, lost)
    assert found(result, "data-disk-retained") == [
        ("data-disk-retained", "mandatory", "lost",
         f"Volume 'lost' would be deleted by pulumi destroy; accepted: retain_on_delete=True with tag "
         f"{v.TAG_RETAIN}=true, protect=True, or an explicit {v.TAG_RETAIN}=false")
    ]
    config = {"data-disk-retained": {"allowOptOut": False}}
    assert [h[2] for h in found(analyze(opted_out, config=config), "data-disk-retained")] == ["scratch"]


def test_retain_tag_without_retain_on_delete_is_caught_offline():
    tagged_only = res(VOLUME, "tagged", volume())
    result = analyze(tagged_only)
    (offline,) = [x for x in result.violations if x.policy == "data-disk-retained"]
    assert (offline.level, offline.stage, offline.resource_name) == ("mandatory", "offline", "tagged")
    # The same first line the SDK gives the rule's own findings, so reports group it with them.
    assert offline.message.partition("\n")[0] == \
        "Data disks outlive the instance and the stack unless the opt-out is explicit."
    assert offline.detail == (f"Volume 'tagged' is tagged {v.TAG_RETAIN}=true but registered without retain_on_delete "
                              "or protect: pulumi destroy would delete it")
    assert [x for x in analyze(tagged_only, config={"data-disk-retained": "disabled"}).violations
            if x.policy == "data-disk-retained"] == []


def test_disks_that_die_with_the_instance():
    gpu = aws_gpu(ebsBlockDevices=[{"deviceName": "/dev/sdf", "volumeSize": 100, "encrypted": True}])
    ali = ali_gpu(dataDisks=[{"size": 100, "encrypted": True}])
    disk = res(ALI_DISK, "disk", {"size": 100, "encrypted": True, "deleteWithInstance": True,
                                  "tags": tags(retain="true")}, retain_on_delete=True)
    attach = res("alicloud:ecs/ecsDiskAttachment:EcsDiskAttachment", "attach",
                 {"diskId": "d-1", "instanceId": "i-1", "deleteWithInstance": True})
    kept = res("alicloud:ecs/ecsDiskAttachment:EcsDiskAttachment", "kept",
               {"diskId": "d-2", "instanceId": "i-1", "deleteWithInstance": False})
    result = analyze(res(AWS_INSTANCE, "gpu", gpu), res(ALI_INSTANCE, "ali", ali), disk, attach, kept)
    assert sorted(found(result, "data-disk-retained")) == [
        ("data-disk-retained", "mandatory", "ali",
         "Instance 'ali': dataDisks[0] is released with the instance; accepted: a separate retained "
         "alicloud.ecs.EcsDisk, or deleteWithInstance=false"),
        ("data-disk-retained", "mandatory", "attach",
         "EcsDiskAttachment 'attach' has deleteWithInstance=true: the attached disk is released together with the "
         "instance"),
        ("data-disk-retained", "mandatory", "disk",
         "EcsDisk 'disk' has deleteWithInstance=true: it is released together with its instance"),
        ("data-disk-retained", "mandatory", "gpu",
         "Instance 'gpu': ebsBlockDevices[0] (/dev/sdf) is deleted when the instance terminates; accepted: a "
         "separate retained aws.ebs.Volume, or deleteOnTermination=false"),
    ]


def test_account_level_block_can_be_refused_and_abort_rules_required():
    bucket = res(AWS_BUCKET, "b", {"bucket": "b", "tags": tags(retain="true"),
                                   "lifecycleRules": [{"enabled": True, "expiration": {"days": 3}}]},
                 retain_on_delete=True)
    account = res("aws:s3/accountPublicAccessBlock:AccountPublicAccessBlock", "acct",
                  {"blockPublicAcls": True, "blockPublicPolicy": True, "ignorePublicAcls": True,
                   "restrictPublicBuckets": True})
    config = {"bucket-public-access-blocked": {"acceptAccountLevelBlock": False}}
    assert [h[2] for h in found(analyze(bucket, account, config=config), "bucket-public-access-blocked")] == ["b"]
    strict = {"bucket-lifecycle-required": {"requireAbortIncompleteUploads": True}}
    assert found(analyze(bucket, account, config=strict), "bucket-lifecycle-required") == [
        ("bucket-lifecycle-required", "advisory", "b",
         "Bucket 'b' has no enabled rule aborting incomplete multipart uploads: parts of interrupted uploads are "
         "billed forever")
    ]
    parts = checkpoint_bucket()
    parts[3].inputs = {**parts[3].inputs, "rules": [{"id": "x", "status": "Enabled",
                                                     "abortIncompleteMultipartUpload": {"daysAfterInitiation": 2}}]}
    parts[3].outputs = dict(parts[3].inputs)
    assert found(analyze(*parts, config=strict), "bucket-lifecycle-required") == []


def test_a_launch_template_without_block_device_mappings_is_flagged_like_an_instance_without_a_root_device():
    lt_type = "aws:ec2/launchTemplate:LaunchTemplate"

    def storage(*resources):
        return [(h[2], h[3]) for h in found(analyze(*resources), "encrypted-storage")]

    bare = res(lt_type, "lt", {"instanceType": "g5.xlarge", "tags": tags()})
    assert storage(bare) == [("lt", "LaunchTemplate 'lt': no block_device_mappings with an ebs block: the image's own "
                              "mappings decide whether the root volume is encrypted, which a preview cannot see (as "
                              "for an instance without root_block_device); accepted: block_device_mappings with "
                              "ebs={'encrypted': True} for the root device")]
    ephemeral_only = res(lt_type, "lt", {"instanceType": "g5.xlarge", "tags": tags(),
                                         "blockDeviceMappings": [{"deviceName": "/dev/sdb", "virtualName": "ephemeral0"}]})
    assert [name for name, _ in storage(ephemeral_only)] == ["lt"]
    mapped = res(lt_type, "lt", {"instanceType": "g5.xlarge", "tags": tags(), "blockDeviceMappings": [
        {"deviceName": "/dev/xvda", "ebs": {"encrypted": True, "volumeSize": 100}}]})
    assert storage(mapped) == []
    # Used only by an instance that sets its own (encrypted) root device: the template's mappings do not matter.
    user = res(AWS_INSTANCE, "gpu", aws_gpu(launchTemplate={"id": "lt-1"}),
               property_dependencies={"launchTemplate": [bare.urn]})
    assert storage(bare, user) == []
