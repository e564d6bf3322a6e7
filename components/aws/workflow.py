"""The workflow before training on AWS: what the instance may read to stage its data, whose readiness passed, and
the personal image baked from its system disk (``components/image_bake.py``).

- Staging reads each source bucket with the instance role (``s3:ListBucket`` on its prefix, ``s3:GetObject`` under
  it) and a private hub token from one Secrets Manager secret (``secretsmanager:GetSecretValue`` on that secret
  only). A secret named without its ARN is matched with ``-??????``: Secrets Manager appends six random
  characters to a secret's name in its ARN ("Permissions policy examples", Secrets Manager user guide,
  https://docs.aws.amazon.com/secretsmanager/latest/userguide/auth-and-access_examples.html).
- The image: ``aws.ebs.Snapshot`` of the root volume, then ``aws.ec2.Ami`` registered from it. Not
  ``aws.ec2.AmiFromInstance``: CreateImage snapshots "the root volume and any other EBS volumes attached to the
  instance" (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/creating-an-ami-ebs.html), so the data disk would
  be copied into the image (its cost, its data, and a second /dev/sdf on every instance launched from it).
  "Snapshots that are taken from encrypted volumes are automatically encrypted"
  (https://docs.aws.amazon.com/ebs/latest/userguide/ebs-encryption.html); the root volume is encrypted, so the
  image is. The Ubuntu-based families' root device is ``/dev/sda1`` (the ``rootDeviceName`` of their images).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, cast

import pulumi
import pulumi_aws as aws

from components.aws.context import AwsContext
from components.aws.storage import object_tags
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

ROOT_DEVICE_NAME = "/dev/sda1"


def secret_arn(secret: str, ctx: AwsContext) -> str:
    if secret.startswith("arn:"):
        return secret
    return f"arn:{ctx.partition}:secretsmanager:{ctx.region}:{ctx.account_id}:secret:{secret}-??????"


def staging_policy(sources: list[DataSourceSpec], secret: str | None, ctx: AwsContext) -> str | None:
    """Read the source buckets' prefixes (a one-object source: that key alone) and the hub token's secret, nothing
    else; None when there is nothing."""
    statements: list[dict] = []
    for i, src in enumerate(s for s in sources if s.source.is_bucket):
        bucket, key = src.source.where, src.source.what
        arn = f"arn:{ctx.partition}:s3:::{bucket}"
        if src.source.is_object:  # copied alone (HeadObject, GetObject on the key): not key.bak, nor key-private/
            statements.append({"Sid": f"ReadSource{i}", "Effect": "Allow", "Action": "s3:GetObject",
                               "Resource": f"{arn}/{key}"})
            continue
        statements.append({"Sid": f"ListSource{i}", "Effect": "Allow", "Action": "s3:ListBucket", "Resource": arn,
                           "Condition": {"StringLike": {"s3:prefix": [key, f"{key}*"]}}})
        statements.append({"Sid": f"ReadSource{i}", "Effect": "Allow", "Action": "s3:GetObject",
                           "Resource": f"{arn}/{key}*"})
    if secret:
        statements.append({"Sid": "ReadHubToken", "Effect": "Allow", "Action": "secretsmanager:GetSecretValue",
                           "Resource": secret_arn(secret, ctx)})
    if not statements:
        return None
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, sort_keys=True)


class AwsWorkflow:
    """Staging permissions, ready records and the baked image on AWS."""

    def allow_staging(self, exp: ExperimentParts, identity: pulumi.Resource) -> None:
        data = exp.spec.data
        document = staging_policy(data.sources, data.hub_token_secret, cast(AwsContext, exp.ctx))
        if document is None:
            return
        profile = cast(aws.iam.InstanceProfile, identity)
        aws.iam.RolePolicy(f"{exp.name}-data-sources", role=profile.role, policy=document, opts=exp.opts())

    def ready_instances(
        self, exp: ExperimentParts, bucket: str, instance: pulumi.CustomResource, folder: str
    ) -> pulumi.Output[list[str]]:
        # Listed once the instance exists: the records a bake reads are the ones its instance could have written.
        prefix = instance.id.apply(lambda _: folder)
        listed = aws.s3.get_objects_output(bucket=bucket, prefix=prefix, opts=exp.ctx.invoke_opts())
        return listed.keys.apply(ready_ids)

    def bake_image(
        self, exp: ExperimentParts, instance: pulumi.CustomResource, ready: pulumi.Output[list[str]], record_uri: str,
        name: str, tags: dict, bucket: str = "",
    ) -> pulumi.CustomResource:
        inst = cast(aws.ec2.Instance, instance)
        root = pulumi.Output.all(inst.id, inst.root_block_device, ready).apply(
            lambda a: (gate(a[0], a[2], record_uri), _volume_id(a[1]))[1]
        )
        # Made once: later updates (a new instance, new tags) never replace or re-bake it.
        keep = exp.opts(retain_on_delete=True, ignore_changes=["volumeId", "description", "tags"],
                        custom_timeouts=pulumi.CustomTimeouts(create=snapshot_create_timeout(exp.spec.image.root_disk_gb)))
        snapshot = aws.ebs.Snapshot(f"{exp.name}-image-root", volume_id=root,
                                    description=f"gpulease {exp.name}: system disk of the baked image {name}",
                                    tags=tags, opts=keep)
        image = aws.ec2.Ami(
            f"{exp.name}-image",
            name=name,
            description=f"gpulease {exp.name}: baked from a ready instance",
            virtualization_type="hvm",
            root_device_name=ROOT_DEVICE_NAME,
            ena_support=True,
            imds_support="v2.0",
            ebs_block_devices=[{"device_name": ROOT_DEVICE_NAME, "snapshot_id": snapshot.id, "volume_type": "gp3",
                                "delete_on_termination": True}],
            tags=tags,
            opts=exp.opts(retain_on_delete=True, ignore_changes=["name", "description", "tags", "ebsBlockDevices"]),
        )
        if bucket:
            # The baked record: later updates keep this image without the readiness gate (image_bake.py).
            aws.s3.BucketObjectv2(
                f"{exp.name}-image-baked", bucket=bucket, key=baked_key(exp.prefix, exp.spec, pulumi.get_stack()),
                content=pulumi.Output.all(image.id, inst.id).apply(lambda a: baked_record(a[0], a[1])),
                content_type="application/json", server_side_encryption="AES256", tags=object_tags(exp.tags),
                opts=exp.opts(depends_on=[image], ignore_changes=["content"]),
            )
        return image


def _volume_id(root: object) -> str:
    if isinstance(root, dict):
        return str(root.get("volume_id") or root.get("volumeId") or "")
    return str(getattr(root, "volume_id", "") or "")
