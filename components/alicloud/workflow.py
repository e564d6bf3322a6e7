"""The workflow before training on Alibaba Cloud: what the instance may read to stage its data, whose readiness
passed, and the personal image baked from its system disk (``components/image_bake.py``).

- Staging reads each source bucket with the instance's RAM role (``oss:ListObjects`` on its prefix,
  ``oss:GetObject`` under it) and a private hub token from one KMS secret (``kms:GetSecretValue`` on
  ``acs:kms:<region>:<account>:secret/<name>``: the RAM authorization table of GetSecretValue,
  https://www.alibabacloud.com/help/en/kms/key-management-service/developer-reference/api-getsecretvalue).
- The image: ``alicloud.ecs.EcsSnapshot`` of the system disk, then ``alicloud.ecs.Image`` created from that
  snapshot (CreateImage with ``SnapshotId``: "a custom image from a snapshot of the system disk";
  https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-createimage). Creating it
  from the instance (``InstanceId``) would include the instance's data disks. Snapshots of an encrypted disk are
  encrypted, and so is an image made from them ("Encrypt a custom image",
  https://www.alibabacloud.com/help/en/ecs/user-guide/encryption-overview); the system disk is encrypted.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, cast

import pulumi
import pulumi_alicloud as alicloud

from components.alicloud.context import AlicloudContext
from components.alicloud.identity import grant
from components.image_bake import (
    baked_key,
    baked_record,
    gate,
    ready_ids,
    snapshot_create_timeout,
)
from components.plan import ExperimentParts

if TYPE_CHECKING:  # annotations only: the spec imports the clouds' spec rules, never the reverse at run time
    from components.spec.workflow import DataSourceSpec


def staging_policy(sources: list[DataSourceSpec], secret: str | None, ctx: AlicloudContext) -> str | None:
    """Read the source buckets' prefixes (a one-object source: that key alone) and the hub token's secret, nothing
    else; None when there is nothing."""
    statements: list[dict] = []
    for src in (s for s in sources if s.source.is_bucket):
        bucket, key = src.source.where, src.source.what
        if src.source.is_object:  # copied alone (GetObjectMeta, GetObject on the key): not key.bak, nor key-private/
            statements.append({"Effect": "Allow", "Action": ["oss:GetObject"], "Resource": [ctx.oss_arn(bucket, key)]})
            continue
        statements.append({"Effect": "Allow", "Action": ["oss:ListObjects"], "Resource": [ctx.oss_arn(bucket)],
                           "Condition": {"StringLike": {"oss:Prefix": [key, f"{key}*"]}}})
        statements.append({"Effect": "Allow", "Action": ["oss:GetObject"], "Resource": [ctx.oss_arn(bucket, f"{key}*")]})
    if secret:
        statements.append({"Effect": "Allow", "Action": ["kms:GetSecretValue"],
                           "Resource": [f"acs:kms:{ctx.region}:{ctx.account_id}:secret/{secret}"]})
    if not statements:
        return None
    return json.dumps({"Version": "1", "Statement": statements}, sort_keys=True)


class AlicloudWorkflow:
    """Staging permissions, ready records and the baked image on Alibaba Cloud."""

    def allow_staging(self, exp: ExperimentParts, identity: pulumi.Resource) -> None:
        data = exp.spec.data
        document = staging_policy(data.sources, data.hub_token_secret, cast(AlicloudContext, exp.ctx))
        if document is None:
            return
        grant(f"{exp.name}-data-sources", f"{exp.name}-data-sources", f"gpulease {exp.name}: read its data sources",
              document, cast(alicloud.ram.Role, identity), tags=exp.tags, opts=exp.opts())

    def ready_instances(
        self, exp: ExperimentParts, bucket: str, instance: pulumi.CustomResource, folder: str
    ) -> pulumi.Output[list[str]]:
        # Listed once the instance exists: the records a bake reads are the ones its instance could have written.
        prefix = instance.id.apply(lambda _: folder)
        listed = alicloud.oss.get_bucket_objects_output(bucket_name=bucket, key_prefix=prefix, opts=exp.ctx.invoke_opts())
        return listed.objects.apply(lambda objects: ready_ids([o.key for o in objects or []]))

    def bake_image(
        self, exp: ExperimentParts, instance: pulumi.CustomResource, ready: pulumi.Output[list[str]], record_uri: str,
        name: str, tags: dict, bucket: str = "",
    ) -> pulumi.CustomResource:
        inst = cast(alicloud.ecs.Instance, instance)
        disk = pulumi.Output.all(inst.id, inst.system_disk_id, ready).apply(
            lambda a: (gate(a[0], a[2], record_uri), str(a[1]))[1]
        )
        snapshot = alicloud.ecs.EcsSnapshot(
            f"{exp.name}-image-root", disk_id=disk, snapshot_name=name,
            description=f"gpulease {exp.name}: system disk of the baked image {name}", tags=tags,
            opts=exp.opts(retain_on_delete=True, ignore_changes=["diskId", "description", "tags", "snapshotName"],
                          custom_timeouts=pulumi.CustomTimeouts(create=snapshot_create_timeout(exp.spec.image.root_disk_gb))),
        )
        image = alicloud.ecs.Image(
            f"{exp.name}-image",
            image_name=name,
            description=f"gpulease {exp.name}: baked from a ready instance",
            snapshot_id=snapshot.id,
            architecture="x86_64",
            platform="Ubuntu",
            tags=tags,
            # The provider's "create - (Defaults to 10 mins)" (terraform-provider-alicloud
            # website/docs/r/image.html.markdown) is the snapshot's problem again: the same bound from the disk size.
            opts=exp.opts(retain_on_delete=True, ignore_changes=["imageName", "description", "tags", "snapshotId"],
                          custom_timeouts=pulumi.CustomTimeouts(create=snapshot_create_timeout(exp.spec.image.root_disk_gb))),
        )
        if bucket:
            # The baked record: later updates keep this image without the readiness gate (image_bake.py).
            alicloud.oss.BucketObject(
                f"{exp.name}-image-baked", bucket=bucket, key=baked_key(exp.prefix, exp.spec, pulumi.get_stack()),
                content=pulumi.Output.all(image.id, inst.id).apply(lambda a: baked_record(a[0], a[1])),
                content_type="application/json", server_side_encryption="AES256", acl="private",
                opts=exp.opts(depends_on=[image], ignore_changes=["content"]),
            )
        return image
