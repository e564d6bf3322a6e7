"""Alibaba Cloud's implementation of the cloud contract (``components/cloud.py``): each file owns its part of it
(``network``, ``storage``, ``identity``, ``instance``, ``lifetime``, ``tags``), so "where is spot configured on Alibaba
Cloud?" is ``instance.py``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from components.alicloud.context import AlicloudAccount
from components.alicloud.identity import AlicloudIdentity
from components.alicloud.instance import AlicloudInstance
from components.alicloud.lifetime import AlicloudLifetime
from components.alicloud.network import AlicloudNetwork
from components.alicloud.spec import RULES
from components.alicloud.storage import AlicloudStorage
from components.alicloud.tags import AlicloudTags
from components.cloud import Cloud, Support


class Alicloud(AlicloudAccount, AlicloudNetwork, AlicloudStorage, AlicloudIdentity, AlicloudInstance, AlicloudLifetime, AlicloudTags, Cloud):
    name = "alicloud"
    spec = RULES
    capabilities: ClassVar[Mapping[str, Support]] = {
        "ssh-scope": Support(
            "one `ecs.SecurityGroupRule` per CIDR, `tcp`, `22/22`, source always explicit (`cidr_ip`, or "
            "`ipv6_cidr_ip` for an IPv6 network), described",
            gap="The VPC gpulease creates on Alibaba Cloud is IPv4 only, so an IPv6 CIDR's rule only admits anyone "
                "in a VPC you give with IPv6 enabled.",
        ),
        "no-inbound": Support(
            "`ssh.mode: cloud-assistant`: no ingress rule; connect with `ali-instance-cli session --instance <id>`",
            gap="Session Manager must be switched on once per Alibaba Cloud account in the ECS console; there is no "
                "API for it.",
        ),
        "spot": Support(
            "`instance_charge_type = PostPaid`, `spot_strategy = SpotAsPriceGo` (or `SpotWithPriceLimit` + "
            "`spot_price_limit`), `spot_interruption_behavior = Terminate`",
            gap="Alibaba Cloud reads `spot_price_limit` in the account's billing currency (CNY on the China site): "
                "`maxSpotPriceUsd` is passed unchanged, so on a China-site account write the cap in CNY.",
        ),
        "deadline": Support(
            "`auto_release_time` = the recorded deadline (UTC `yyyy-MM-ddTHH:mm:ssZ`, rounded down to the minute): "
            "ECS releases the instance itself",
            gap="Alibaba Cloud refuses a release time under 30 minutes ahead: the spec rejects `maxRuntimeHours` < "
                "0.75 (30 minutes plus the time to create the resources before the instance) and `expiresAt` < 30 "
                "min away, and `pulumi up` stops with a message once the deadline is that close (renew it or let it "
                "end).",
        ),
        "shutdown-from-inside": Support(
            "no such setting: an OS shutdown only stops the instance",
            gap="ECS has no \"terminate on OS shutdown\". A stopped pay-as-you-go instance is billed for compute "
                "unless the account's default stop mode is economical (`StopCharging`); `auto_release_time` still "
                "releases it at the deadline.",
            given=False,
        ),
        "metadata": Support(
            "`http_tokens = required`; hop limit the service default (1): pulumi_alicloud 4.0.0 documents "
            "`http_put_response_hop_limit` as not available yet",
            gap="On Alibaba Cloud a container reaches the metadata service (and the role's credentials) only with "
                "host networking: the hop limit cannot be raised to 2 through the provider yet.",
        ),
        "encryption": Support(
            "encrypted `cloud_essd` system disk, encrypted `ecs.EcsDisk` (`kmsKeyId` optional), OSS SSE AES256, "
            "TLS-only bucket policy (`acs:SecureTransport`)",
        ),
        "retention": Support(
            "`ecs.EcsDisk` `retain_on_delete` with `delete_with_instance = false` (survives the release and spot "
            "reclaims), OSS bucket `retain_on_delete`, attachment `retain_on_delete`",
        ),
        "lifecycle": Support(
            "the same rules in `oss.Bucket.lifecycle_rules` (versioning and encryption set on the bucket from its "
            "first moment)",
        ),
        "noncurrent-versions-kept": Support(
            "not expressible",
            gap="OSS lifecycle rules expire noncurrent versions by age only; on `alicloud` the spec refuses "
                "`noncurrentVersionsToKeep` rather than ignore it.",
            given=False,
        ),
        "tags": Support(
            "the same keys and values, unchanged (ECS and OSS accept `:` in keys and `@` in values); instance tags "
            "also on its system disk",
            gap="Alibaba Cloud allows 20 tags per resource, 64-character keys on OSS, 128-character values and no "
                "`aliyun`/`acs:` prefixes; the spec refuses user tags and values that break this, and "
                "`components/alicloud/tags.py` checks the final set before anything is created.",
        ),
        "storage-access": Support(
            "RAM role for `ecs.aliyuncs.com`: `oss:ListObjects` with `oss:Prefix` on the prefix only, "
            "get/put/abort/list-parts on `bucket/prefix*`; no role when there is no bucket",
            gap="The RAM role is attached right after the instance starts (`ecs.RamRoleAttachment`, the provider's "
                "replacement for the deprecated `role_name`), so credentials appear seconds after boot, well before "
                "the first checkpoint sync is due.",
        ),
        "network": Support(
            "a VPC (`10.42.0.0/16`) and one `/24` vSwitch per zone offering the type, created unless "
            "`network.vpcId`/`subnetId` name existing ones",
        ),
    }



ALICLOUD = Alicloud()
