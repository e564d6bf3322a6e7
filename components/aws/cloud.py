"""AWS's implementation of the cloud contract (``components/cloud.py``): each step delegates to the file that owns
it (``network``, ``storage``, ``identity``, ``instance``, ``lifetime``), so "where is spot configured on AWS?" is
``instance.py``, one hop from here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import pulumi
import pulumi_aws as aws

from components.aws import identity as iam
from components.aws import instance, lifetime, network, storage
from components.aws.context import AwsContext, lookup_context
from components.aws.spec import RULES
from components.cloud import Cloud, Support
from components.plan import Bucket, DataDisk, ExperimentParts, Network, Placement, SshSource
from components.spec.experiment import ExperimentSpec


class Aws(Cloud):
    name = "aws"
    spec = RULES
    capabilities: ClassVar[Mapping[str, Support]] = {
        "ssh-scope": Support('one `aws.vpc.SecurityGroupIngressRule` per CIDR, tcp 22–22, described'),
        "no-inbound": Support('`ssh.mode: ssm`: no ingress rule, SSM core policy on the role'),
        "spot": Support('one-time spot request, `terminate` on interruption, `max_price` from `maxSpotPriceUsd`'),
        "deadline": Support('EventBridge Scheduler one-time schedule at the recorded deadline terminates that one instance'),
        "shutdown-from-inside": Support('`instance_initiated_shutdown_behavior = terminate`: a watchdog shutdown ends billing'),
        "metadata": Support('IMDSv2 only (`http_tokens = required`), hop limit 2'),
        "encryption": Support('encrypted gp3 root, encrypted EBS data volume (`kmsKeyId` optional), bucket SSE AES256, TLS-only bucket policy'),
        "retention": Support('data volume and bucket `retain_on_delete` (tag `gpulease:retain`), attachment `skip_destroy`'),
        "lifecycle": Support('expire under the prefix after `keepDays`, noncurrent versions after `noncurrentDays`, abort uploads, transitions, delete-marker cleanup; versioning on'),
        "noncurrent-versions-kept": Support('`newer_noncurrent_versions = noncurrentVersionsToKeep`'),
        "tags": Support('the same keys from `gpulease/core/vocabulary.py` on every taggable resource'),
        "storage-access": Support('instance role: `s3:ListBucket` on the prefix only, get/put/abort/list-parts on `bucket/prefix*`'),
        "network": Support("the default VPC's subnet in the first zone offering the type"),
    }

    def provider(self, region: str) -> pulumi.ProviderResource:
        return aws.Provider(f"aws-{region}", region=region)

    def lookup_context(self, region: str, provider: pulumi.ProviderResource | None) -> AwsContext:
        return lookup_context(region, provider)

    def resolve_network(self, base: ExperimentSpec, ctx: AwsContext) -> str:
        return network.resolve_vpc(base, ctx)

    def existing_disk_zone(self, disk_id: str, ctx: AwsContext) -> str:
        return storage.existing_disk_zone(disk_id, ctx)

    def place(
        self, exp: ExperimentSpec, instance_type: str, vpc_id: str | None, ctx: AwsContext, required_zone: str | None
    ) -> Placement:
        assert vpc_id is not None  # resolve_network always finds one on AWS
        return network.place(exp, instance_type, vpc_id, ctx, required_zone)

    def resolve_image(self, exp: ExperimentSpec, instance_type: str, ctx: AwsContext) -> str:
        return instance.resolve_image(exp, ctx)

    def create_network(
        self, name: str, placements: Mapping[str, Placement], tags: dict, parent: pulumi.Resource
    ) -> tuple[pulumi.Input[str], dict[str, pulumi.Input[str]]]:
        # The lookups found the VPC and a subnet in every zone: nothing to create.
        first = next(iter(placements.values()))
        return str(first.vpc_id), {p.zone: str(p.subnet_id) for p in placements.values()}

    def create_security_group(
        self, name: str, description: str, sources: list[SshSource], vpc_id: pulumi.Input[str], tags: dict,
        parent: pulumi.Resource,
    ) -> aws.ec2.SecurityGroup:
        return network.create_security_group(name, description, sources, vpc_id, tags, parent)

    def create_key_pair(self, name: str, public_key: str, tags: dict, parent: pulumi.Resource) -> pulumi.Input[str]:
        return network.create_key_pair(name, public_key, tags, parent)

    def create_bucket(
        self, name: str, bucket: str, spec: ExperimentSpec, tags: dict, ctx: AwsContext, parent: pulumi.Resource
    ) -> Bucket:
        return storage.create_bucket(name, bucket, spec, tags, ctx, parent)

    def create_bootstrap_bucket(self, name: str, bucket: str, tags: dict, ctx: AwsContext, parent: pulumi.Resource) -> Bucket:
        return storage.create_bootstrap_bucket(name, bucket, tags, ctx, parent)

    def create_data_disk(self, exp: ExperimentParts, tags: dict) -> DataDisk:
        return storage.create_data_disk(exp.spec, exp.placed.placement.zone, tags, exp.parent)

    def create_identity(self, exp: ExperimentParts, bucket: Bucket | None) -> aws.iam.InstanceProfile:
        return iam.create_instance_profile(
            exp.name, bucket_arn=bucket.arn if bucket else None, prefix=exp.prefix if bucket else None,
            ssm=exp.spec.ssh.mode == self.spec.session_mode, tags=exp.tags, ctx=exp.ctx, parent=exp.parent,
        )

    def upload_tools(self, exp: ExperimentParts, bucket: Bucket, key: str, bundle: str) -> pulumi.Resource:
        return storage.upload_tools(exp.name, bucket, key, bundle, exp.tags, exp.parent)

    def allow_tools_read(self, exp: ExperimentParts, identity: pulumi.Resource, bucket: Bucket, key: str) -> pulumi.Resource:
        return storage.allow_tools_read(exp.name, identity, bucket, key, exp.parent)

    def create_instance(
        self, exp: ExperimentParts, *, network: Network, identity: pulumi.Resource, user_data: pulumi.Input[str],
        depends_on: list[pulumi.Resource],
    ) -> aws.ec2.Instance:
        # The deadline is its own schedule (after_instance), not a property of the instance.
        return instance.create_instance(
            exp.spec,
            instance_type=exp.placed.instance_type.type,
            image_id=exp.placed.image_id,
            from_family=exp.spec.image.id is None,
            subnet_id=network.subnets[exp.placed.placement.zone],
            security_group=network.security_group,
            key_name=network.key_name,
            instance_profile=identity,
            user_data=user_data,
            tags=exp.tags,
            depends_on=depends_on,
            parent=exp.parent,
        )

    def attach_data_disk(self, exp: ExperimentParts, disk: DataDisk, instance: pulumi.CustomResource) -> pulumi.Resource:
        return storage.attach_data_disk(exp.spec, disk, instance, exp.parent)

    def after_instance(self, exp: ExperimentParts, instance: pulumi.CustomResource, identity: pulumi.Resource) -> None:
        lifetime.create_termination_schedule(exp.name, instance=instance, deadline=exp.deadline, tags=exp.tags,
                                             ctx=exp.ctx, parent=exp.parent)

    def session_command(self, instance_id: str, region: str) -> str:
        return f"aws ssm start-session --target {instance_id} --region {region}"


AWS = Aws()
