"""Data that must outlive the instance: the encrypted data volume and the checkpoint bucket.

Retention: a retained volume or bucket is registered with ``retain_on_delete``. ``pulumi destroy`` then
finishes (the stack can be removed, the CI teardown never blocks) while the disk and the bucket stay in the
account, tagged ``gpulease:retain=true`` so that the reaper leaves them alone; reattach the disk with
``dataDisk.existingVolumeId``. ``protect`` would instead make every destroy fail until someone edits state
by hand, which is the opposite of what an ephemeral experiment needs.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pulumi
import pulumi_aws as aws

from components.aws.context import AwsContext
from components.plan import Bucket, DataDisk, ExperimentParts, OneAfterAnother, tools_object_args
from gpulease.core import vocabulary as v

if TYPE_CHECKING:  # the spec's types only: at run time a cloud folder needs none of the spec's code
    from components.spec.experiment import ExperimentSpec
    from components.spec.sections import CheckpointSpec


DATA_DEVICE_NAME = "/dev/sdf"
S3_OBJECT_TAG_LIMIT = 10
"""S3: "You can associate up to 10 tags with an object" (Managing object tags, S3 user guide,
https://docs.aws.amazon.com/AmazonS3/latest/userguide/tagging-managing.html); PutObject with more fails."""
OBJECT_TAG_KEYS = (v.TAG_MANAGED_BY, v.TAG_STACK, v.TAG_EXPERIMENT, v.TAG_OWNER, v.TAG_PROJECT, v.TAG_COST_CENTER,
                   v.TAG_EXPIRES_AT, v.TAG_NODE, v.TAG_CI_RUN)
"""The tags an object the kit writes carries: who and what it belongs to (an object is billed as its bucket's
storage, so the budget and price tags are not needed on it; the policy pack demands none on objects)."""


def object_tags(tags: dict) -> dict:
    """``tags`` narrowed to the object tags S3 accepts (at most ten: ``OBJECT_TAG_KEYS``)."""
    return {k: tags[k] for k in OBJECT_TAG_KEYS if k in tags}


def lifecycle_rules(checkpoints: CheckpointSpec) -> list[dict]:
    """Lifecycle for the checkpoint prefix: expire old checkpoints, cap noncurrent versions, abort stale uploads."""
    lc = checkpoints.lifecycle
    rule: dict = {
        "id": "gpulease-checkpoints",
        "status": "Enabled",
        "filter": {"prefix": checkpoints.prefix},
        "expiration": {"days": lc.keep_days},
        "noncurrent_version_expiration": {
            "noncurrent_days": lc.noncurrent_days,
            **({"newer_noncurrent_versions": lc.noncurrent_versions_to_keep} if lc.noncurrent_versions_to_keep else {}),
        },
        "abort_incomplete_multipart_upload": {"days_after_initiation": lc.abort_incomplete_upload_days},
    }
    if lc.transitions:
        rule["transitions"] = [{"days": t.days, "storage_class": t.storage_class} for t in lc.transitions]
    cleanup = {
        "id": "gpulease-expired-delete-markers",
        "status": "Enabled",
        "filter": {"prefix": checkpoints.prefix},
        "expiration": {"expired_object_delete_marker": True},
    }
    return [rule, cleanup]


def tls_only_policy(bucket_arn: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "DenyInsecureTransport",
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "s3:*",
                    "Resource": [bucket_arn, f"{bucket_arn}/*"],
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                }
            ],
        },
        sort_keys=True,
    )


class AwsStorage:
    """The storage part of the AWS cloud: buckets, the data volume and its attachment, the tools object."""

    def bucket_arn(self, bucket: str, ctx: AwsContext) -> str:
        return f"arn:{ctx.partition}:s3:::{bucket}"

    def create_bucket(
        self, base: str, name: str, spec: ExperimentSpec, tags: dict, ctx: AwsContext, parent: pulumi.Resource
    ) -> Bucket:
        """The checkpoint bucket: private, encrypted, versioned, TLS-only, with lifecycle rules."""
        cp = spec.checkpoints
        return self._hardened_bucket(f"{base}-checkpoints", name, tags, ctx, parent, retain=cp.retain, versioned=True,
                                     lifecycle=lifecycle_rules(cp))

    def _hardened_bucket(
        self, resource: str, name: str, tags: dict, ctx: AwsContext, parent: pulumi.Resource, *, retain: bool,
        versioned: bool, lifecycle: list[dict],
    ) -> Bucket:
        """A private, encrypted, TLS-only bucket with lifecycle rules (and versioning when ``versioned``).

        The settings are applied one after the other, each depending on the one before: S3 may refuse concurrent
        changes to one bucket with 409 OperationAborted, and the order itself matters. Public access is blocked
        first; encryption and versioning are in place before the lifecycle rules (rules on noncurrent versions need
        a versioned bucket); the TLS-only policy (a Deny, which BlockPublicPolicy accepts since it grants nothing)
        comes last. A writer depends on the whole chain, so nothing is written earlier."""
        arn = self.bucket_arn(name, ctx)
        bucket = aws.s3.Bucket(
            resource,
            bucket=name,
            force_destroy=not retain,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=parent, retain_on_delete=retain),
        )
        chain = OneAfterAnother(bucket, parent)

        chain.add(aws.s3.BucketOwnershipControls(
            f"{resource}-ownership",
            bucket=bucket.id,
            rule={"object_ownership": "BucketOwnerEnforced"},
            opts=chain.next_opts(),
        ))
        chain.add(aws.s3.BucketPublicAccessBlock(
            f"{resource}-public-access",
            bucket=bucket.id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            opts=chain.next_opts(),
        ))
        # SSE-S3 (AES256) only: an S3 Bucket Key applies to SSE-KMS and has no effect here (S3 user guide, "Reducing
        # the cost of SSE-KMS with Amazon S3 Bucket Keys"), so it is not set.
        chain.add(aws.s3.BucketServerSideEncryptionConfiguration(
            f"{resource}-encryption",
            bucket=bucket.id,
            rules=[{"apply_server_side_encryption_by_default": {"sse_algorithm": "AES256"}}],
            opts=chain.next_opts(),
        ))
        if versioned:
            chain.add(aws.s3.BucketVersioning(
                f"{resource}-versioning",
                bucket=bucket.id,
                versioning_configuration={"status": "Enabled"},
                opts=chain.next_opts(),
            ))
        chain.add(aws.s3.BucketLifecycleConfiguration(f"{resource}-lifecycle", bucket=bucket.id, rules=lifecycle,
                                                         opts=chain.next_opts()))
        chain.add(aws.s3.BucketPolicy(f"{resource}-tls-only", bucket=bucket.id, policy=tls_only_policy(arn), opts=chain.next_opts()))
        return Bucket(name=name, arn=arn, settings=chain.items)

    def existing_disk_zone(self, volume_id: str, ctx: AwsContext) -> str:
        found = aws.ebs.get_volume(filters=[{"name": "volume-id", "values": [volume_id]}], opts=ctx.invoke_opts())
        return found.availability_zone


    def create_data_disk(self, exp: ExperimentParts, tags: dict) -> DataDisk:
        spec, disk = exp.spec, exp.spec.data_disk
        if disk.existing_volume_id:
            # Reattached, never managed: destroying this stack leaves the disk exactly as it was.
            return DataDisk(id=disk.existing_volume_id, resource=None)
        volume = aws.ebs.Volume(
            f"{exp.name}-data",
            availability_zone=exp.placed.placement.zone,
            size=disk.size_gb,
            type=spec.disk_type,
            iops=disk.iops,
            throughput=disk.throughput,
            encrypted=True,
            kms_key_id=disk.kms_key_id,
            tags=tags,
            opts=exp.opts(retain_on_delete=disk.retain),
        )
        return DataDisk(id=volume.id, resource=volume)


    def attach_data_disk(self, exp: ExperimentParts, volume: DataDisk, instance: pulumi.CustomResource) -> aws.ec2.VolumeAttachment:
        # skip_destroy: on destroy the attachment is only forgotten; terminating the instance detaches the disk.
        # A forced detach of a mounted disk could corrupt it, and a one-time spot instance cannot be stopped first.
        # instance_id is replace-triggering, so replacing the instance replaces the attachment; delete-before-replace
        # (here and on the instance) makes the engine drop the old attachment and terminate the old instance before
        # the new instance and its attachment are created: the volume is free again when it is attached.
        return aws.ec2.VolumeAttachment(
            f"{exp.name}-data-attachment",
            device_name=DATA_DEVICE_NAME,
            volume_id=volume.id,
            instance_id=instance.id,
            skip_destroy=True,
            opts=exp.opts(delete_before_replace=True),
        )


    # --- the instance-side tools (see components/userdata: AWS user-data carries only their loader) ----------------


    def create_bootstrap_bucket(self, base: str, name: str, tags: dict, ctx: AwsContext, parent: pulumi.Resource) -> Bucket:
        """A bucket for the kit's own tools only: private, encrypted, TLS-only, its old versions and stale uploads
        expired. It holds nothing the user made, so it goes with the stack (``force_destroy``, no retention)."""
        rules = [{"id": "gpulease-bootstrap", "status": "Enabled", "filter": {"prefix": ""},
                  "noncurrent_version_expiration": {"noncurrent_days": 1},
                  "abort_incomplete_multipart_upload": {"days_after_initiation": 1}}]
        return self._hardened_bucket(f"{base}-bootstrap", name, tags, ctx, parent, retain=False, versioned=False,
                                     lifecycle=rules)

    def upload_tools(self, exp: ExperimentParts, bucket: Bucket, key: str, bundle: str) -> aws.s3.BucketObjectv2:
        """The tools bundle one experiment's instance fetches (its key carries its SHA-256: new tools, new object)."""
        return aws.s3.BucketObjectv2(
            f"{exp.name}-tools",
            **tools_object_args(bucket, key, bundle),
            tags=object_tags(exp.tags),
            opts=exp.opts(depends_on=bucket.settings),
        )
