"""The Alibaba Cloud compute forms (pulumi_alicloud): ECS instances and instance sets, launch templates, ESS scaling
groups and configurations, ACK node pools. Argument names are the SDK's (engine form, camelCase); every claim
about what Alibaba Cloud does cites its source.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpulease.core import resources as rt
from gpulease.core import vocabulary as v
from gpulease.core.compute.forms import (
    ON_DEMAND,
    SPOT,
    TEMPLATE,
    Attached,
    ComputeForm,
    Deadline,
    Disk,
    Market,
    Metadata,
    TemplateRef,
    UserData,
    distribution,
    register,
)
from gpulease.core.compute.paths import UNKNOWN, count, read

IMDS_UNSET = "its default is optional, which leaves tokenless metadata reads open (pulumi_alicloud ecs.Instance http_tokens)"
_METADATA = Metadata(tokens="httpTokens", endpoint="httpEndpoint", hop_limit="httpPutResponseHopLimit",
                     how="http_tokens='required'", unset=IMDS_UNSET)
_TEMPLATE_REFS = (
    TemplateRef("launchTemplateId", None, None, "launchTemplateId", rt.ALI_LAUNCH_TEMPLATES),
    TemplateRef("launchTemplateName", None, None, "launchTemplateName", rt.ALI_LAUNCH_TEMPLATES),
)
_RELEASE_TIME = Deadline(
    kind="release-time", time="autoReleaseTime",
    accepted=f"auto_release_time no later than its {v.TAG_EXPIRES_AT} tag",
    source="https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-runinstances (AutoReleaseTime)",
)
_SYSTEM_DISK = Disk("the system disk", "", "systemDiskEncrypted", "systemDiskKmsKeyId")
_DATA_DISKS = Disk("dataDisks", "dataDisks.*")
LIFETIME_DECOY = ("maxInstanceLifetime", "max_instance_lifetime makes ESS replace an instance when it ages out; it "
                  "never stops the group (pulumi_alicloud ess.ScalingGroup max_instance_lifetime)")


def _spot_strategy(props: Mapping[str, Any]) -> Market:
    strategy = read(props, "spotStrategy")
    if strategy is UNKNOWN:
        return Market(UNKNOWN)
    if strategy in (None, ""):
        return Market(None)
    return Market(ON_DEMAND if strategy == "NoSpot" else SPOT, f"spotStrategy={strategy}")


def _group_market(props: Mapping[str, Any]) -> Market:
    """An ESS group or ACK node pool mixes on-demand and spot only when it sets the distribution; otherwise its
    configuration's (or its own) spot strategy decides."""
    base, percent = read(props, "onDemandBaseCapacity"), read(props, "onDemandPercentageAboveBaseCapacity")
    if base is None and percent is None:
        return _spot_strategy(props)
    return distribution(base, percent, ("onDemandBaseCapacity", "onDemandPercentageAboveBaseCapacity"))


def _node_pool_capacity(props: Mapping[str, Any]) -> Any:
    """The most nodes an ACK node pool runs. pulumi_alicloud's docstrings give no default for
    ``scaling_config.enable`` ("Whether to enable automatic scaling. Value:"), ``desired_size`` ("Number of expected
    nodes in the node pool") or ``node_count`` ("not required" since 1.111.0): a scaling config with a
    ``max_size`` and ``enable`` unset may scale to ``max_size``, and a pool that names no size at all has an
    unknown one, never 0."""
    enable = read(props, "scalingConfig.enable")
    high = read(props, "scalingConfig.maxSize")
    if enable is UNKNOWN:
        return UNKNOWN
    if rt.flag(enable) or (enable is None and high is not None):
        return count(props, "scalingConfig.maxSize")
    for path in ("desiredSize", "nodeCount"):
        value = count(props, path)
        if value is not None:
            return value
    return UNKNOWN


def _without_template(what: str) -> Any:
    def gap(props: Mapping[str, Any]) -> str | None:
        if read(props, "launchTemplateId") is not None or read(props, "launchTemplateName") is not None:
            return None
        return what

    return gap


register(
    ComputeForm(
        token=rt.ALI_INSTANCE, cloud="alicloud", label="ECS instance",
        templates=_TEMPLATE_REFS,
        market=_spot_strategy, spot_how="spotStrategy=SpotAsPriceGo", spot_cap="spotPriceLimit",
        metadata=_METADATA, user_data=(UserData("userData"),), disks=(_SYSTEM_DISK, _DATA_DISKS),
        deadlines=(_RELEASE_TIME,),
        public_ip=("internetMaxBandwidthOut",), security_groups=("securityGroups",),
        source="pulumi_alicloud ecs.Instance",
    ),
    ComputeForm(
        token=rt.ALI_INSTANCE_SET, cloud="alicloud", label="ECS instance set",
        templates=_TEMPLATE_REFS,
        capacity=lambda props: count(props, "amount", 1),
        market=_spot_strategy, spot_how="spot_strategy='SpotAsPriceGo'", spot_cap="spotPriceLimit",
        metadata_gap=_without_template(
            "ecs.EcsInstanceSet has no http_tokens; accepted: launch_template_id of an ecs.EcsLaunchTemplate with "
            "http_tokens='required'"),
        disk_gap=_without_template(
            "ecs.EcsInstanceSet has no system disk encryption setting; accepted: launch_template_id of an "
            "ecs.EcsLaunchTemplate whose system_disk is encrypted"),
        user_data=(),
        disks=(Disk("dataDisks", "dataDisks.*"),),
        deadlines=(_RELEASE_TIME,),
        public_ip=("internetMaxBandwidthOut",), security_groups=("securityGroupIds",),
        source="pulumi_alicloud ecs.EcsInstanceSet",
    ),
    *(
        ComputeForm(
            token=token, cloud="alicloud", label="ECS launch template", role=TEMPLATE,
            market=_spot_strategy, spot_how="spot_strategy='SpotAsPriceGo'", spot_cap="spotPriceLimit",
            metadata=_METADATA,
            user_data=(UserData("userData", encoded=True), UserData("userdata", encoded=True)),
            disks=(Disk("the system disk", "systemDisk"), Disk("dataDisks", "dataDisks.*")),
            instance_tags=lambda props: rt.tag_map(read(props, "tags")),
            identity=("id", "launchTemplateName", "name"),
            public_ip=("internetMaxBandwidthOut",), security_groups=("securityGroupId", "securityGroupIds"),
            source="pulumi_alicloud ecs.EcsLaunchTemplate / ecs.LaunchTemplate",
        )
        for token in rt.ALI_LAUNCH_TEMPLATES
    ),
    ComputeForm(
        token=rt.ALI_SCALING_CONFIGURATION, cloud="alicloud", label="ESS scaling configuration", role=TEMPLATE,
        instance_types=("instanceType", "instanceTypes", "instanceTypeOverrides.*.instanceType"),
        market=_spot_strategy, spot_how="spot_strategy='SpotAsPriceGo'",
        metadata_gap=lambda props: (
            "ess.ScalingConfiguration has no http_tokens (pulumi_alicloud 4.0.0); accepted: the scaling group's "
            "launch_template_id naming an ecs.EcsLaunchTemplate with http_tokens='required'"),
        user_data=(UserData("userData"),),
        disks=(_SYSTEM_DISK, _DATA_DISKS),
        instance_tags=lambda props: rt.tag_map(read(props, "tags")),  # "applied for ECS instances finally"
        public_ip=("internetMaxBandwidthOut",), security_groups=("securityGroupId", "securityGroupIds"),
        source="pulumi_alicloud ess.ScalingConfiguration",
    ),
    ComputeForm(
        token=rt.ALI_SCALING_GROUP, cloud="alicloud", label="ESS scaling group",
        instance_types=("launchTemplateOverrides.*.instanceType",),
        templates=(TemplateRef("launchTemplateId", None, None, "launchTemplateId", rt.ALI_LAUNCH_TEMPLATES),),
        attached=(Attached(rt.ALI_SCALING_CONFIGURATION, "scalingGroupId"),),
        capacity=lambda props: count(props, "maxSize"),
        desired=lambda props: count(props, "desiredCapacity"),
        weights=("launchTemplateOverrides.*.weightedCapacity",),
        market=_group_market,
        spot_how="on_demand_base_capacity=0 and on_demand_percentage_above_base_capacity=0, or a scaling "
        "configuration with spot_strategy='SpotAsPriceGo'",
        deadlines=(
            Deadline(kind="ess-task", link="scalingGroupId", requires={"maxValue": 0},
                     accepted=f"a one-time alicloud.ess.ScheduledTask on it with max_value=0 (and min_value, "
                     f"desired_capacity 0) whose launch_time is no later than its {v.TAG_EXPIRES_AT} tag",
                     source="pulumi_alicloud ess.ScheduledTask; https://www.alibabacloud.com/help/en/auto-scaling/"
                     "user-guide/scheduled-tasks"),
        ),
        decoys=(LIFETIME_DECOY,),
        identity=("id", "scalingGroupName"),
        source="pulumi_alicloud ess.ScalingGroup",
    ),
    ComputeForm(
        token=rt.ALI_NODE_POOL, cloud="alicloud", label="ACK node pool",
        instance_types=("instanceTypes",),
        capacity=_node_pool_capacity,
        unsized="it names no size: no desired_size, node_count or scaling_config.max_size, and pulumi_alicloud "
        "documents no default",
        desired=lambda props: count(props, "desiredSize"),
        market=_group_market, spot_how="spot_strategy='SpotAsPriceGo'",
        metadata=Metadata(tokens="instanceMetadataOptions.httpTokens", endpoint=None, hop_limit=None,
                          how="instance_metadata_options={'http_tokens': 'required'}", unset=IMDS_UNSET),
        user_data=(UserData("userData", encoded=True), UserData("preUserData", encoded=True)),
        disks=(Disk("the system disk", "", "systemDiskEncrypted", "systemDiskKmsKey"), _DATA_DISKS),
        unbounded=(
            "an ACK node pool has no release time, and ACK replaces an instance released under it and warns "
            "against changing its scaling group directly (https://www.alibabacloud.com/help/en/"
            "container-service-for-kubernetes/latest/scale-up-and-down-node-pools); accepted: GPUs as ECS "
            "instances with auto_release_time, or an ESS scaling group with a scheduled task to zero, or this "
            "resource named in max-runtime-cloud-stop's acceptUnbounded after review"),
        public_ip=("internetMaxBandwidthOut", "scalingConfig.isBondEip"), security_groups=("securityGroupIds",),
        source="pulumi_alicloud cs.NodePool",
    ),
)
