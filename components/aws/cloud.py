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
from components.plan import Bucket, DataDisk, Network, PlacedExperiment, Placement
from components.spec.experiment import ExperimentSpec
from components.spec.sections import SshSpec


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

    def build_network(
        self, name: str, ssh: SshSpec, plan_placements: Mapping[str, Placement], tags: dict, parent: pulumi.Resource
    ) -> Network:
        vpc_id = next(iter(plan_placements.values())).vpc_id
        sg = network.create_security_group(name, ssh, vpc_id, tags, parent)
        key_name = network.create_key_pair(name, ssh, tags, parent)
        subnets = {p.zone: p.subnet_id for p in plan_placements.values() if p.subnet_id}
        return Network(security_group=sg, key_name=key_name, subnets=subnets)

    def create_bucket(
        self, name: str, bucket: str, spec: ExperimentSpec, tags: dict, ctx: AwsContext, parent: pulumi.Resource
    ) -> Bucket:
        return storage.create_bucket(name, bucket, spec, tags, ctx, parent)

    def create_bootstrap_bucket(self, name: str, bucket: str, tags: dict, ctx: AwsContext, parent: pulumi.Resource) -> Bucket:
        return storage.create_bootstrap_bucket(name, bucket, tags, ctx, parent)

    def create_data_disk(self, exp: ExperimentSpec, zone: str, tags: dict, parent: pulumi.Resource) -> DataDisk:
        return storage.create_data_disk(exp, zone, tags, parent)

    def create_identity(
        self, exp: ExperimentSpec, *, bucket: Bucket | None, prefix: str, tags: dict, ctx: AwsContext,
        parent: pulumi.Resource,
    ) -> aws.iam.InstanceProfile:
        return iam.create_instance_profile(
            exp.name, bucket_arn=bucket.arn if bucket else None, prefix=prefix if bucket else None,
            ssm=exp.ssh.mode == self.spec.session_mode, tags=tags, ctx=ctx, parent=parent,
        )

    def upload_tools(
        self, name: str, bucket: Bucket, key: str, bundle: str, tags: dict, parent: pulumi.Resource
    ) -> pulumi.Resource:
        return storage.upload_tools(name, bucket, key, bundle, tags, parent)

    def allow_tools_read(
        self, name: str, identity: pulumi.Resource, bucket: Bucket, key: str, tags: dict, ctx: AwsContext,
        parent: pulumi.Resource,
    ) -> pulumi.Resource:
        return storage.allow_tools_read(name, identity, bucket, key, parent)

    def create_instance(
        self,
        exp: ExperimentSpec,
        placed: PlacedExperiment,
        *,
        network: Network,
        identity: pulumi.Resource,
        user_data: pulumi.Input[str],
        deadline: pulumi.Output[str],
        tags: dict,
        depends_on: list[pulumi.Resource],
        parent: pulumi.Resource,
    ) -> aws.ec2.Instance:
        # The deadline is enforced by its own schedule (after_instance), not by the instance.
        return instance.create_instance(
            exp,
            instance_type=placed.instance_type.type,
            image_id=placed.image_id,
            from_family=exp.image.id is None,
            subnet_id=placed.placement.subnet_id,
            security_group=network.security_group,
            key_name=network.key_name,
            instance_profile=identity,
            user_data=user_data,
            tags=tags,
            depends_on=depends_on,
            parent=parent,
        )

    def attach_data_disk(
        self, exp: ExperimentSpec, disk: DataDisk, instance: pulumi.CustomResource, parent: pulumi.Resource
    ) -> pulumi.Resource:
        return storage.attach_data_disk(exp, disk, instance, parent)

    def after_instance(
        self, exp: ExperimentSpec, instance: pulumi.CustomResource, *, identity: pulumi.Resource,
        deadline: pulumi.Output[str], tags: dict, ctx: AwsContext, parent: pulumi.Resource,
    ) -> None:
        lifetime.create_termination_schedule(exp.name, instance=instance, deadline=deadline, tags=tags, ctx=ctx,
                                             parent=parent)

    def session_command(self, instance_id: str, region: str) -> str:
        return f"aws ssm start-session --target {instance_id} --region {region}"


AWS = Aws()
