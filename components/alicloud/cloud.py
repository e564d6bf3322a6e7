"""Alibaba Cloud's implementation of the cloud contract (``components/cloud.py``): each step delegates to the file
that owns it (``network``, ``storage``, ``identity``, ``instance``, ``lifetime``, ``tags``), so "where is spot
configured on Alibaba Cloud?" is ``instance.py``, one hop from here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import pulumi
import pulumi_alicloud as alicloud

from components.alicloud import identity as ram
from components.alicloud import instance, lifetime, network, storage
from components.alicloud.context import AlicloudContext, lookup_context
from components.alicloud.spec import RULES
from components.alicloud.tags import encode_tags
from components.cloud import Cloud, Support
from components.plan import (
    Bucket,
    DataDisk,
    ExperimentParts,
    Network,
    PlacedExperiment,
    Placement,
    PlacementError,
    SshSource,
)
from components.spec.experiment import ExperimentSpec
from components.spec.load import StackSpec
from components.tagging import experiment_tags

# A stand-in for the recorded deadline while checking tags before anything is registered (same length).
_DEADLINE_PLACEHOLDER = "2000-01-01T00:00:00Z"


class Alicloud(Cloud):
    name = "alicloud"
    spec = RULES
    capabilities: ClassVar[Mapping[str, Support]] = {
        "ssh-scope": Support('one `ecs.SecurityGroupRule` per CIDR, `tcp`, `22/22`, source always explicit (`cidr_ip`, or `ipv6_cidr_ip` for an IPv6 network), described', gap="The VPC gpulease creates on Alibaba Cloud is IPv4 only, so an IPv6 CIDR's rule only admits anyone in a VPC you give with IPv6 enabled."),
        "no-inbound": Support('`ssh.mode: cloud-assistant`: no ingress rule; connect with `ali-instance-cli session --instance <id>`', gap='Session Manager must be switched on once per Alibaba Cloud account in the ECS console; there is no API for it.'),
        "spot": Support('`instance_charge_type = PostPaid`, `spot_strategy = SpotAsPriceGo` (or `SpotWithPriceLimit` + `spot_price_limit`), `spot_interruption_behavior = Terminate`', gap="Alibaba Cloud reads `spot_price_limit` in the account's billing currency (CNY on the China site): `maxSpotPriceUsd` is passed unchanged, so on a China-site account write the cap in CNY."),
        "deadline": Support('`auto_release_time` = the recorded deadline (UTC `yyyy-MM-ddTHH:mm:ssZ`, rounded down to the minute): ECS releases the instance itself', gap='Alibaba Cloud refuses a release time under 30 minutes ahead: the spec rejects `maxRuntimeHours` < 0.75 (30 minutes plus the time to create the resources before the instance) and `expiresAt` < 30 min away, and `pulumi up` stops with a message once the deadline is that close (renew it or let it end).'),
        "shutdown-from-inside": Support('no such setting: an OS shutdown only stops the instance', gap='ECS has no "terminate on OS shutdown". A stopped pay-as-you-go instance is billed for compute unless the account\'s default stop mode is economical (`StopCharging`); `auto_release_time` still releases it at the deadline.', given=False),
        "metadata": Support(
            "`http_tokens = required`; hop limit the service default (1): pulumi_alicloud 4.0.0 documents "
            "`http_put_response_hop_limit` as not available yet",
            gap="On Alibaba Cloud a container reaches the metadata service (and the role's credentials) only with host "
            "networking: the hop limit cannot be raised to 2 through the provider yet.",
        ),
        "encryption": Support('encrypted `cloud_essd` system disk, encrypted `ecs.EcsDisk` (`kmsKeyId` optional), OSS SSE AES256, TLS-only bucket policy (`acs:SecureTransport`)'),
        "retention": Support('`ecs.EcsDisk` `retain_on_delete` with `delete_with_instance = false` (survives the release and spot reclaims), OSS bucket `retain_on_delete`, attachment `retain_on_delete`'),
        "lifecycle": Support('the same rules in `oss.Bucket.lifecycle_rules` (versioning and encryption set on the bucket from its first moment)'),
        "noncurrent-versions-kept": Support('not expressible', gap='OSS lifecycle rules expire noncurrent versions by age only; on `alicloud` the spec refuses `noncurrentVersionsToKeep` rather than ignore it.', given=False),
        "tags": Support('the same keys and values, unchanged (ECS and OSS accept `:` in keys and `@` in values); instance tags also on its system disk', gap='Alibaba Cloud allows 20 tags per resource, 64-character keys on OSS, 128-character values and no `aliyun`/`acs:` prefixes; the spec refuses user tags and values that break this, and `components/alicloud/tags.py` checks the final set before anything is created.'),
        "storage-access": Support('RAM role for `ecs.aliyuncs.com`: `oss:ListObjects` with `oss:Prefix` on the prefix only, get/put/abort/list-parts on `bucket/prefix*`; no role when there is no bucket', gap="The RAM role is attached right after the instance starts (`ecs.RamRoleAttachment`, the provider's replacement for the deprecated `role_name`), so credentials appear seconds after boot, well before the first checkpoint sync is due."),
        "network": Support('a VPC (`10.42.0.0/16`) and one `/24` vSwitch per zone offering the type, created unless `network.vpcId`/`subnetId` name existing ones'),
    }

    def provider(self, region: str) -> pulumi.ProviderResource:
        return alicloud.Provider(f"alicloud-{region}", region=region)

    def lookup_context(self, region: str, provider: pulumi.ProviderResource | None) -> AlicloudContext:
        return lookup_context(region, provider)

    def resolve_network(self, base: ExperimentSpec, ctx: AlicloudContext) -> None:
        return None  # each run's zone and vSwitch decide it (place); check_placements keeps them in one VPC

    def existing_disk_zone(self, disk_id: str, ctx: AlicloudContext) -> str:
        return storage.existing_disk_zone(disk_id, ctx)

    def place(
        self, exp: ExperimentSpec, instance_type: str, vpc_id: str | None, ctx: AlicloudContext, required_zone: str | None
    ) -> Placement:
        return network.place(exp, instance_type, ctx, required_zone)

    def resolve_image(self, exp: ExperimentSpec, instance_type: str, ctx: AlicloudContext) -> str:
        return instance.resolve_image(exp, instance_type, ctx)

    def check_tags(self, exp: ExperimentSpec, stack: str, checkpoint_uri: str) -> None:
        probe = experiment_tags(exp, stack=stack, expires_at=_DEADLINE_PLACEHOLDER, checkpoint_uri=checkpoint_uri, retain=True)
        encode_tags(probe, stack=stack, resource=f"experiment {exp.name!r}")

    def check_placements(self, spec: StackSpec, placed: Mapping[str, PlacedExperiment]) -> None:
        vpcs = {p.placement.vpc_id for p in placed.values()}
        if len(vpcs) > 1:
            raise PlacementError(
                f"stack '{spec.stack}': the runs landed in different VPCs ({', '.join(sorted(str(x) for x in vpcs))}); "
                "they share one security group, so give network.vpcId or network.subnetId in base"
            )

    def tagged(self, tags: dict[str, pulumi.Input[str]], *, stack: str, what: str) -> dict[str, pulumi.Input[str]]:
        return encode_tags(tags, stack=stack, resource=what)

    def create_network(
        self, name: str, placements: Mapping[str, Placement], tags: dict, parent: pulumi.Resource
    ) -> tuple[pulumi.Input[str], dict[str, pulumi.Input[str]]]:
        # check_placements kept every run in one VPC: the one given, else a VPC the stack creates.
        given_vpc = next(iter(placements.values())).vpc_id
        vpc_id: pulumi.Input[str] = given_vpc or network.create_vpc(name, tags, parent).id
        vswitches: dict[str, pulumi.Input[str]] = {}
        for p in placements.values():
            if p.subnet_id:
                vswitches[p.zone] = p.subnet_id
            elif p.zone not in vswitches:
                vswitches[p.zone] = network.create_vswitch(name, p.zone, vpc_id, tags, parent).id
        return vpc_id, vswitches

    def create_security_group(
        self, name: str, description: str, sources: list[SshSource], vpc_id: pulumi.Input[str], tags: dict,
        parent: pulumi.Resource,
    ) -> alicloud.ecs.SecurityGroup:
        return network.create_security_group(name, description, sources, vpc_id, tags, parent)

    def create_key_pair(self, name: str, public_key: str, tags: dict, parent: pulumi.Resource) -> pulumi.Input[str]:
        return network.create_key_pair(name, public_key, tags, parent)

    def create_bucket(
        self, name: str, bucket: str, spec: ExperimentSpec, tags: dict, ctx: AlicloudContext, parent: pulumi.Resource
    ) -> Bucket:
        return storage.create_bucket(name, bucket, spec, tags, ctx, parent)

    def create_bootstrap_bucket(
        self, name: str, bucket: str, tags: dict, ctx: AlicloudContext, parent: pulumi.Resource
    ) -> Bucket:
        return storage.create_bootstrap_bucket(name, bucket, tags, ctx, parent)

    def create_data_disk(self, exp: ExperimentParts, tags: dict) -> DataDisk:
        return storage.create_data_disk(exp.spec, exp.placed.placement.zone, tags, exp.parent)

    def create_identity(self, exp: ExperimentParts, bucket: Bucket | None) -> alicloud.ram.Role:
        # Every instance gets a role: its checkpoint prefix when there is a bucket, and (after it exists) the right to
        # release itself, since a stop from inside keeps a pay-as-you-go instance billing.
        return ram.create_instance_role(
            exp.name, bucket_arn=bucket.arn if bucket else None, prefix=exp.prefix, tags=exp.tags, parent=exp.parent
        )

    def upload_tools(self, exp: ExperimentParts, bucket: Bucket, key: str, bundle: str) -> pulumi.Resource:
        return storage.upload_tools(exp.name, bucket, key, bundle, exp.parent)

    def allow_tools_read(self, exp: ExperimentParts, identity: pulumi.Resource, bucket: Bucket, key: str) -> pulumi.Resource:
        return ram.allow_tools_read(exp.name, identity, exp.ctx.oss_arn(bucket.name, key), tags=exp.tags, parent=exp.parent)

    def create_instance(
        self, exp: ExperimentParts, *, network: Network, identity: pulumi.Resource, user_data: pulumi.Input[str],
        depends_on: list[pulumi.Resource],
    ) -> alicloud.ecs.Instance:
        placed = exp.placed
        return instance.create_instance(
            exp.spec,
            instance_type=placed.instance_type.type,
            image_id=placed.image_id,
            from_family=exp.spec.image.id is None,
            vswitch_id=network.subnets[placed.placement.zone],
            security_group=network.security_group,
            key_name=network.key_name,
            # ECS releases the instance at the recorded deadline by itself (lifetime.py).
            auto_release_time=lifetime.auto_release_time(exp.name, exp.deadline),
            user_data=user_data,
            tags=exp.tags,
            depends_on=depends_on,
            parent=exp.parent,
        )

    def attach_data_disk(self, exp: ExperimentParts, disk: DataDisk, instance: pulumi.CustomResource) -> pulumi.Resource:
        return storage.attach_data_disk(exp.spec, disk, instance, exp.parent)

    def after_instance(self, exp: ExperimentParts, instance: pulumi.CustomResource, identity: pulumi.Resource) -> None:
        ram.attach_instance_role(exp.name, identity, instance, exp.parent)
        ram.allow_self_release(exp.name, identity, instance, region=exp.ctx.region, account_id=exp.ctx.account_id,
                               tags=exp.tags, parent=exp.parent)

    def session_command(self, instance_id: str, region: str) -> str:
        return f"ali-instance-cli session --instance {instance_id}"


ALICLOUD = Alicloud()
