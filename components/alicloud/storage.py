"""Data that must outlive the instance: the encrypted data disk and the checkpoint bucket.

Retention works as on AWS: a retained disk or bucket is registered with ``retain_on_delete``, so ``pulumi
destroy`` finishes while the disk and the bucket stay in the account, tagged ``gpulease:retain=true`` for the
reaper to leave alone; reattach the disk with ``dataDisk.existingVolumeId``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pulumi
import pulumi_alicloud as alicloud

from components.alicloud.context import AlicloudContext
from components.naming import scoped_name
from components.plan import Bucket, DataDisk, ExperimentParts, OneAfterAnother, tools_object_args
from gpulease.core.errors import UserError

if TYPE_CHECKING:  # the spec's types only: at run time a cloud folder needs none of the spec's code
    from components.spec.experiment import ExperimentSpec
    from components.spec.sections import CheckpointSpec


# Disk categories ECS resizes online (alicloud_ecs_disk docs, argument ``type``).
ONLINE_RESIZE_CATEGORIES = ("cloud_efficiency", "cloud_ssd", "cloud_essd")


class DiskLookupError(UserError):
    """The disk to reattach does not exist in the region."""


def lifecycle_rules(checkpoints: CheckpointSpec) -> list[dict]:
    """Lifecycle for the checkpoint prefix: expire old checkpoints, expire noncurrent versions, abort stale uploads.

    OSS has no "keep the newest N noncurrent versions" (AWS ``newer_noncurrent_versions``): noncurrent
    versions expire by age only, after ``noncurrentDays``."""
    lc = checkpoints.lifecycle
    rule: dict = {
        "id": "gpulease-checkpoints",
        "enabled": True,
        "prefix": checkpoints.prefix,
        "expirations": [{"days": lc.keep_days}],
        "noncurrent_version_expirations": [{"days": lc.noncurrent_days}],
        "abort_multipart_uploads": [{"days": lc.abort_incomplete_upload_days}],
    }
    if lc.transitions:
        rule["transitions"] = [{"days": t.days, "storage_class": t.storage_class} for t in lc.transitions]
    cleanup = {
        "id": "gpulease-expired-delete-markers",
        "enabled": True,
        "prefix": checkpoints.prefix,
        "expirations": [{"expired_object_delete_marker": True}],
    }
    return [rule, cleanup]


def tls_only_policy(bucket: str, account_id: str) -> str:
    """Refuse every request over plain HTTP, as the AWS bucket does."""
    return json.dumps(
        {
            "Version": "1",
            "Statement": [
                {
                    "Effect": "Deny",
                    "Principal": ["*"],
                    "Action": ["oss:*"],
                    "Resource": [f"acs:oss:*:{account_id}:{bucket}", f"acs:oss:*:{account_id}:{bucket}/*"],
                    "Condition": {"Bool": {"acs:SecureTransport": ["false"]}},
                }
            ],
        },
        sort_keys=True,
    )


class AlicloudStorage:
    """The storage part of the Alibaba Cloud cloud: buckets, the data disk and its attachment, the tools object."""

    def bucket_arn(self, bucket: str, ctx: AlicloudContext) -> str:
        return ctx.oss_arn(bucket)

    def create_bucket(
        self, base: str, name: str, spec: ExperimentSpec, tags: dict, ctx: AlicloudContext, parent: pulumi.Resource
    ) -> Bucket:
        """The checkpoint bucket: private, encrypted, versioned, TLS-only, with lifecycle rules.

        Versioning, encryption and the lifecycle rules are set on the bucket itself: pulumi_alicloud 4.0.0 has no
        separate lifecycle resource, and a separate versioning or encryption resource would fight the bucket's own
        (non-computed) fields. Within the bucket's create the provider applies them in a fixed order: CreateBucket
        (storage class, redundancy), then lifecycle, policy, encryption, tags and versioning last
        (terraform-provider-alicloud resource_alicloud_oss_bucket.go, resourceAlicloudOssBucketUpdate). So the
        lifecycle rules reach OSS before versioning is on; whether OSS accepts the noncurrent-version and
        delete-marker rules on a bucket not yet versioned is not verifiable without a cloud (docs/provider-facts.md)."""
        cp = spec.checkpoints
        return self._hardened_bucket(
            f"{base}-checkpoints", name, tags, ctx, parent, retain=cp.retain,
            versioning={"status": "Enabled"},
            lifecycle_rules=lifecycle_rules(cp),
            # The main rule and the delete-marker rule share the prefix and both expire; OSS needs this to accept them.
            lifecycle_rule_allow_same_action_overlap=True,
        )

    def _hardened_bucket(
        self, resource: str, name: str, tags: dict, ctx: AlicloudContext, parent: pulumi.Resource, *, retain: bool,
        **settings: object,
    ) -> Bucket:
        """A private, encrypted (SSE AES256), TLS-only bucket with ``settings`` on the bucket itself.

        The separate settings follow one after the other: ACL private, public access blocked, then the TLS-only
        policy. A Deny statement is never public for OSS ("If the Effect in the bucket policy is Deny, the statement
        is considered non-public": OSS Block Public Access docs), so the blocked bucket accepts it. A writer depends
        on the whole chain, so nothing is written before the bucket is private and TLS-only."""
        bucket = alicloud.oss.Bucket(
            resource,
            bucket=name,
            storage_class="Standard",
            redundancy_type="LRS",
            server_side_encryption_rule={"sse_algorithm": "AES256"},
            force_destroy=not retain,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=parent, retain_on_delete=retain),
            **settings,  # type: ignore[arg-type]
        )
        chain = OneAfterAnother(bucket, parent)

        chain.add(alicloud.oss.BucketAcl(f"{resource}-acl", bucket=bucket.bucket, acl="private", opts=chain.next_opts()))
        chain.add(alicloud.oss.BucketPublicAccessBlock(
            f"{resource}-public-access", bucket=bucket.bucket, block_public_access=True, opts=chain.next_opts()
        ))
        chain.add(alicloud.oss.BucketPolicy(
            f"{resource}-tls-only", bucket=bucket.bucket, policy=tls_only_policy(name, ctx.account_id), opts=chain.next_opts(),
        ))
        return Bucket(name=name, arn=self.bucket_arn(name, ctx), settings=chain.items)

    def existing_disk_zone(self, disk_id: str, ctx: AlicloudContext) -> str:
        found = alicloud.ecs.get_ecs_disks(ids=[disk_id], opts=ctx.invoke_opts()).disks
        if not found:
            raise DiskLookupError(f"dataDisk.existingVolumeId: disk {disk_id} does not exist in {ctx.region}")
        return found[0].zone_id


    def create_data_disk(self, exp: ExperimentParts, tags: dict) -> DataDisk:
        spec, disk, zone_id = exp.spec, exp.spec.data_disk, exp.placed.placement.zone
        if disk.existing_volume_id:
            # Reattached, never managed: destroying this stack leaves the disk exactly as it was.
            return DataDisk(id=disk.existing_volume_id, resource=None)
        ecs_disk = alicloud.ecs.EcsDisk(
            f"{exp.name}-data",
            disk_name=scoped_name(f"{exp.name}-data", 128),
            description=f"gpulease {exp.name}: data disk",
            zone_id=zone_id,
            size=disk.size_gb,
            category=spec.disk_type,
            performance_level=disk.performance_level or ("PL1" if spec.disk_type == "cloud_essd" else None),
            encrypted=True,
            kms_key_id=disk.kms_key_id,
            payment_type="PayAsYouGo",
            # A bigger sizeGb takes effect without a reboot where ECS can resize online ("online: ... You can resize
            # ultra disks, standard SSDs, and ESSDs online": alicloud_ecs_disk docs); offline (the provider default)
            # waits for the next restart.
            type="online" if spec.disk_type in ONLINE_RESIZE_CATEGORIES else None,
            # The instance is released at its deadline or on a spot interruption; the disk must outlive it.
            delete_with_instance=False,
            delete_auto_snapshot=False,
            tags=tags,
            opts=exp.opts(retain_on_delete=disk.retain),
        )
        return DataDisk(id=ecs_disk.id, resource=ecs_disk)


    def attach_data_disk(
        self, exp: ExperimentParts, disk: DataDisk, instance: pulumi.CustomResource
    ) -> alicloud.ecs.EcsDiskAttachment:
        # retain_on_delete: on destroy the attachment is only forgotten; releasing the instance detaches the disk.
        # A forced detach of a mounted disk could corrupt it (the AWS side uses skip_destroy for the same reason).
        # instance_id is ForceNew (alicloud_ecs_disk_attachment docs), so a replaced instance replaces the attachment;
        # delete-before-replace here and on the instance releases the old instance before the disk is attached anew.
        return alicloud.ecs.EcsDiskAttachment(
            f"{exp.name}-data-attachment",
            disk_id=disk.id,
            instance_id=instance.id,
            delete_with_instance=False,
            opts=exp.opts(retain_on_delete=True, delete_before_replace=True),
        )


    # --- the instance-side tools (see components/userdata: user-data carries only their loader) --------------------


    def create_bootstrap_bucket(
        self, base: str, name: str, tags: dict, ctx: AlicloudContext, parent: pulumi.Resource
    ) -> Bucket:
        """A bucket for the kit's own tools only: private, encrypted, TLS-only, stale uploads aborted. It holds
        nothing the user made, so it goes with the stack (``force_destroy``, no retention)."""
        rules = [{"id": "gpulease-bootstrap", "enabled": True, "prefix": "", "abort_multipart_uploads": [{"days": 1}]}]
        return self._hardened_bucket(f"{base}-bootstrap", name, tags, ctx, parent, retain=False, lifecycle_rules=rules)

    def upload_tools(self, exp: ExperimentParts, bucket: Bucket, key: str, bundle: str) -> alicloud.oss.BucketObject:
        """The tools bundle one experiment's instance fetches (its key carries its SHA-256: new tools, new object)."""
        return alicloud.oss.BucketObject(
            f"{exp.name}-tools",
            **tools_object_args(bucket, key, bundle),
            acl="private",
            opts=exp.opts(depends_on=bucket.settings),
        )
