"""Alibaba Cloud's implementation of the cloud contract (``components/cloud.py``): each file owns its part of it
(``network``, ``storage``, ``identity``, ``instance``, ``lifetime``, ``tags``), so "where is spot configured on Alibaba
Cloud?" is ``instance.py``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from components.alicloud.cluster import AlicloudCluster
from components.alicloud.context import AlicloudAccount
from components.alicloud.identity import AlicloudIdentity
from components.alicloud.instance import AlicloudInstance
from components.alicloud.lifetime import AlicloudLifetime
from components.alicloud.network import AlicloudNetwork
from components.alicloud.spec import RULES
from components.alicloud.storage import AlicloudStorage
from components.alicloud.tags import AlicloudTags
from components.alicloud.workflow import AlicloudWorkflow
from components.cloud import Cloud, Support


class Alicloud(AlicloudAccount, AlicloudNetwork, AlicloudStorage, AlicloudIdentity, AlicloudInstance, AlicloudLifetime, AlicloudTags,
               AlicloudCluster, AlicloudWorkflow, Cloud):
    name = "alicloud"
    spec = RULES
    capabilities: ClassVar[Mapping[str, Support]] = {
        "ssh-scope": Support(
            "one `ecs.SecurityGroupRule` per CIDR, `tcp`, `22/22`, source always explicit (`cidr_ip`, or "
            "`ipv6_cidr_ip` for an IPv6 network), described; the group drops traffic between its members "
            "(`inner_access_policy = Drop`)",
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
            "`spot_price_limit`), `spot_interruption_behavior = Terminate` (`Stop` with `spot.recover`)",
            gap="Alibaba Cloud reads `spot_price_limit` in the account's billing currency (CNY on the China site): "
                "`maxSpotPriceUsd` is passed unchanged, so on a China-site account write the cap in CNY.",
        ),
        "spot-recovery": Support(
            "with `spot.recover` (the default on spot with checkpoints): `spot_interruption_behavior = Stop`: a "
            "reclaim stops the instance in economical mode (compute released and no longer billed; its disks and "
            "private address kept and billed); `auto_release_time` still releases it at the deadline; `gpulease "
            "resume STACK` starts it again (`StartInstance`)",
            gap="ECS never starts a reclaimed instance again by itself (a restart is a new request for resources and "
                "fails while the zone has no stock), and no cloud-side timer is both bounded and safe: an OOS timer "
                "execution waits between runs, which pulumi-alicloud's `oos.Execution` cannot create (it waits for "
                "`Success`), a periodic OOS state configuration would also start an instance the watchdog stopped "
                "on purpose, and an ESS scaling group's replacement carries no `auto_release_time`. On Alibaba Cloud "
                "the way back is one command, `gpulease resume STACK`, refused past the deadline ([spot "
                "recovery](clouds.md#spot-recovery)).",
            given=False,
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
            "no such setting: after the final sync the watchdog releases its own instance (`DeleteInstance`, "
            "`Force`, signed with the role's STS credentials through a RAM policy allowing `DeleteInstance`, "
            "`StopInstance` and `DescribeInstances` on this instance only); if the API refuses, a stop in no-charge "
            "mode (`StopInstance`, `StoppedMode=StopCharging`), then an OS shutdown. The log says which happened",
            gap="ECS has no \"terminate on OS shutdown\", and an OS shutdown only stops a pay-as-you-go instance: in "
                "standard mode it keeps billing for compute until `auto_release_time` releases it at the deadline. "
                "The release needs the ECS API to be reachable from the instance.",
            given=False,
        ),
        "metadata": Support(
            "`http_tokens = required` (security hardening mode), instance tags readable in metadata; hop limit not "
            "set",
            gap="The hop limit cannot be set: pulumi-alicloud 4.0.0 documents `http_put_response_hop_limit` as \"not "
                "available for use yet\", so the service default (1) applies and containers reach the metadata "
                "service only with host networking.",
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
            "the same rules in `oss.Bucket.lifecycle_rules`; versioning, encryption and lifecycle are set on the "
            "bucket itself (the provider applies the lifecycle before versioning); ACL → public-access block → "
            "TLS-only policy chained after it, and the instance waits for the whole chain",
            gap="pulumi-alicloud 4.0.0 has no separate lifecycle resource, so versioning cannot be switched on "
                "before the lifecycle rules; whether OSS accepts noncurrent-version rules on a bucket not yet "
                "versioned is not verifiable without a cloud ([provider "
                "facts](provider-facts.md#not-verifiable-without-a-cloud)).",
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
            "`oss:GetBucketInfo`/`GetBucketLocation`, get/put/abort/list-parts on `bucket/prefix*`, put on its ready records "
            "`bucket/_gpulease/prefix/ready/*` and its reports `bucket/_gpulease/prefix/control/*` (a cluster node N above "
            "0: `bucket/_gpulease/prefix/nodes/N/control/*`); release/stop and "
            "describe (its deadline tag) of its own instance; every instance has a role (the self-release needs one)",
            gap="The RAM role is attached right after the instance starts (`ecs.RamRoleAttachment`, the provider's "
                "replacement for the deprecated `role_name`), so credentials appear seconds after boot: the tools "
                "loader retries until they do, well before the first checkpoint sync is due.",
        ),
        "network": Support(
            "a VPC (`10.42.0.0/16`) and one `/24` vSwitch per zone offering the type, created unless "
            "`network.vpcId`/`subnetId` name existing ones",
        ),
        "replacement": Support(
            "the same with `image_id`, plus `replace_on_changes: [image_id]` for a pinned image (the provider would "
            "otherwise swap the system disk in place) and `spot_interruption_behavior` (set only at creation); data disks of `cloud_essd`, `cloud_ssd`, `cloud_efficiency` "
            "resize online (`type: online`)",
            gap="A user-data change (an edited hook, a new kit version with changed instance tools) reboots the "
                "instance in place on Alibaba Cloud, while AWS replaces it. Disks and buckets are never replaced on "
                "either cloud (the replacement rehearsal checks every example stack).",
        ),
        "nvidia-driver": Support(
            "the Ubuntu 22.04 public image (the only family) has none: the bootstrap installs the same pinned driver "
            "(`nvidia-headless-580-server`, `nvidia-utils-580-server`), loads it and checks `nvidia-smi`",
            gap="Only on a family known to have no driver, and only while `nvidia-smi` sees no GPU (a reboot "
                "installs nothing). The install takes minutes (a DKMS build); a pinned `image.id` gets nothing "
                "installed. If the GPU stays unusable the bootstrap reports `GPU NOT USABLE` naming the driver and "
                "the instance is NOT READY ([troubleshooting](troubleshooting.md#gpu-not-usable)). Alibaba's own "
                "auto-install script is not used: it reads metadata without a token. The CUDA runtime comes with "
                "PyTorch's wheels or conda packages.",
        ),
        "budget-alerts": Support(
            "none in the stack: the watchdog's spend estimate (worst-case hourly price x hours up, against "
            "`budgetUsd`) logs a warning and runs `watchdog.warnHook` at each `budgetAlerts` threshold",
            gap="pulumi-alicloud 4.0.0 has no budget resource (no module of the SDK creates one; its `bss` module "
                "holds only the pricing lookups `get_open_api_products` and `get_open_api_pricing_modules`), so no e-mail "
                "reaches the owner from Alibaba Cloud's billing; point `watchdog.warnHook` at a notifier and "
                "watch `gpulease status`.",
            given=False,
        ),
        "cluster": Support(
            "`nodes: N` in one vSwitch, addresses fixed at plan time (rank 0's is the rendezvous); a deployment set "
            "with the `LowLatency` strategy for on-demand clusters; an Elastic RDMA Interface (`HighPerformance` "
            "secondary ENI) on the types that take one; a rule admitting the group's own members; every node has "
            "the same `auto_release_time`",
            gap="Spot instances cannot be created in a deployment set, so a spot cluster is held together by its zone "
                "and vSwitch only; which families accept `LowLatency` and how many ERIs a type takes are per region "
                "(`DescribeDeploymentSetSupportedInstanceTypeFamily`, `EriQuantity`): not verifiable without a cloud.",
        ),
    }



ALICLOUD = Alicloud()
