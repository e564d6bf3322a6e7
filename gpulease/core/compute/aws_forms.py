"""The AWS compute forms (pulumi_aws): instances, spot requests, templates, autoscaling groups, fleets, EKS node
groups. Argument names are the SDK's (engine form, camelCase); every claim about what AWS does cites its source.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from gpulease.core import resources as rt
from gpulease.core import vocabulary as v
from gpulease.core.compute.forms import (
    MIXED,
    ON_DEMAND,
    SPOT,
    TEMPLATE,
    ComputeForm,
    Deadline,
    Disk,
    LinkedHazard,
    Market,
    Metadata,
    TemplateRef,
    UserData,
    distribution,
    register,
)
from gpulease.core.compute.paths import UNKNOWN, count, number, read, read_all

IMDS_UNSET = (
    "EC2 then requires tokens only when the image declares ImdsSupport v2.0 and no account-level default says "
    "otherwise, and leaves IMDSv1 open in every other case (InstanceMetadataOptionsRequest.HttpTokens, "
    "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/configuring-instance-metadata-options.html)"
)
NO_MAPPINGS = (
    "no block_device_mappings with an ebs block: the image's own mappings decide whether the root volume is "
    "encrypted, which a preview cannot see (as for an instance without root_block_device); accepted: "
    "block_device_mappings with ebs={'encrypted': True} for the root device"
)
SCHEDULER_DOC = "https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-targets-universal.html"
LIFETIME_DECOY = (
    "maxInstanceLifetime",
    "max_instance_lifetime replaces each instance with a new one when it ages out; it never stops the group "
    "(https://docs.aws.amazon.com/autoscaling/ec2/userguide/asg-max-instance-lifetime.html)",
)

_METADATA = Metadata(
    tokens="metadataOptions.httpTokens",
    endpoint="metadataOptions.httpEndpoint",
    hop_limit="metadataOptions.httpPutResponseHopLimit",
    how="metadata_options={'http_tokens': 'required'}",
    unset=IMDS_UNSET,
)
_LAUNCH_TEMPLATE_REF = TemplateRef("launchTemplate", "id", "name", "launchTemplate",
                                   (rt.AWS_LAUNCH_TEMPLATE, rt.AWS_NATIVE_LAUNCH_TEMPLATE))
_INSTANCE_DISKS = (
    Disk("the root block device", "rootBlockDevice"),
    Disk("ebsBlockDevices", "ebsBlockDevices.*", name_key="deviceName"),
)
_INSTANCE_USER_DATA = (UserData("userData"), UserData("userDataBase64", encoded=True))


def _folded(value: Any) -> Any:
    """An enum value as EC2 compares it, case aside: ``Spot`` and ``Persistent`` are read as ``spot`` and
    ``persistent`` (fail closed: a spelling the reader took for something else would hide a request)."""
    return value.strip().lower() if isinstance(value, str) else value


def _instance_market(props: Mapping[str, Any]) -> Market:
    market = read(props, "instanceMarketOptions.marketType")
    if market is UNKNOWN:
        return Market(UNKNOWN)
    if market is None:
        return Market(None)
    return Market(SPOT if _folded(market) == "spot" else ON_DEMAND, f"instanceMarketOptions.marketType={market}")


def _terminate_schedule(accepted_for: str) -> Deadline:
    return Deadline(
        kind="scheduler",
        target=rt.TERMINATE_TARGET,
        ids_key="InstanceIds",
        accepted=f"a one-time at(...) EventBridge Scheduler schedule calling ec2:terminateInstances for {accepted_for}, "
        f"no later than its {v.TAG_EXPIRES_AT} tag",
        source=SCHEDULER_DOC,
    )


REOPENS = ("terminating its instance re-opens the request, which launches a new one "
           "(https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/using-spot-instances-request.html"
           "#terminating-a-spot-instance)")
CANCEL_SCHEDULE = Deadline(
    kind="scheduler",
    target=rt.CANCEL_SPOT_TARGET,
    ids_key="SpotInstanceRequestIds",
    accepted=f"a one-time at(...) EventBridge Scheduler schedule calling ec2:cancelSpotInstanceRequests for that "
    f"request, no later than its {v.TAG_EXPIRES_AT} tag and at least 60 s before the one terminating its instance",
    source=SCHEDULER_DOC,
)


def _ends_in_time(until: Any, expires: datetime | None) -> bool:
    """The request's own ``valid_until`` is no later than the deadline: it ends there, cancelled or not."""
    if not isinstance(until, str) or expires is None:
        return False
    try:
        return v.parse_rfc3339(until) <= expires
    except ValueError:
        return False


def _persistent_spot_request(props: Mapping[str, Any], expires: datetime | None) -> str | None:
    """A persistent request relaunches what a deadline terminated, until the request itself ends (its valid_until,
    or a schedule cancelling it: ``CANCEL_SCHEDULE``)."""
    spot_type = _folded(read(props, "spotType", "persistent"))  # pulumi_aws creates persistent requests by default
    if spot_type is UNKNOWN or spot_type == "one-time" or _ends_in_time(read(props, "validUntil"), expires):
        return None
    return (f"spot_type is persistent (pulumi_aws's default): {REOPENS}; accepted: spot_type='one-time', or "
            f"valid_until no later than its {v.TAG_EXPIRES_AT} tag")


def _persistent_market_options(props: Mapping[str, Any], expires: datetime | None) -> str | None:
    """An instance's own persistent request (instance_market_options): the same hazard as a spot request's, read
    where the instance keeps it (one-time is RunInstances' default, SpotMarketOptions.SpotInstanceType)."""
    if _folded(read(props, "instanceMarketOptions.marketType")) != "spot":
        return None
    spot_type = _folded(read(props, "instanceMarketOptions.spotOptions.spotInstanceType", "one-time"))
    until = read(props, "instanceMarketOptions.spotOptions.validUntil")
    if spot_type is UNKNOWN or spot_type != "persistent" or _ends_in_time(until, expires):
        return None
    return (f"instance_market_options.spot_options.spot_instance_type is persistent: {REOPENS}; accepted: "
            f"spot_instance_type='one-time', or valid_until no later than its {v.TAG_EXPIRES_AT} tag")


def _request_hazards(props: Mapping[str, Any], expires: datetime | None) -> list[str]:
    """A persistent request whose instance a reclaim terminates (RequestSpotInstances' default; RunInstances takes
    persistent only with stop or hibernate) opens again and launches a new instance, which carries none of the
    request's tags and which no schedule names, whatever ends the request later."""
    behavior = _folded(read(props, "instanceInterruptionBehavior", "terminate"))  # the SDK docstring's default
    if _folded(read(props, "spotType", "persistent")) != "persistent" or behavior in ("stop", "hibernate", UNKNOWN):
        return []
    return [f"spot_type persistent with instance_interruption_behavior={behavior} cannot be bounded: a reclaim "
            "terminates its instance and the request opens again and launches a new one (\"If the request is "
            "persistent, the request is opened again after your Spot Instance is interrupted\", https://docs.aws."
            "amazon.com/AWSEC2/latest/UserGuide/spot-requests.html), untagged and named by no schedule; accepted: "
            "spot_type='one-time', or instance_interruption_behavior='stop' with a schedule cancelling the request"]


def _lt_instance_tags(props: Mapping[str, Any]) -> Mapping[str, Any]:
    tags: dict[str, Any] = {}
    for spec in read_all(props, "tagSpecifications.*"):
        if isinstance(spec, Mapping) and spec.get("resourceType") == "instance":
            tags.update(rt.tag_map(spec.get("tags")))
    return tags


def _spot_price_market(props: Mapping[str, Any]) -> Market:
    price = read(props, "spotPrice")
    if price is UNKNOWN:
        return Market(UNKNOWN)
    return Market(SPOT, f"spotPrice={price}") if price not in (None, "") else Market(None)


def _asg_market(props: Mapping[str, Any]) -> Market:
    if read(props, "mixedInstancesPolicy") is None:
        return Market(None)
    # InstancesDistribution: OnDemandBaseCapacity defaults to 0, OnDemandPercentageAboveBaseCapacity to 100
    # (https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_InstancesDistribution.html).
    return distribution(
        read(props, "mixedInstancesPolicy.instancesDistribution.onDemandBaseCapacity"),
        read(props, "mixedInstancesPolicy.instancesDistribution.onDemandPercentageAboveBaseCapacity"),
        ("onDemandBaseCapacity", "onDemandPercentageAboveBaseCapacity"),
    )


def _asg_hazards(props: Mapping[str, Any], expires: datetime | None) -> list[str]:
    if rt.flag(read(props, "protectFromScaleIn")):
        return ["protect_from_scale_in=true: instances protected from scale-in are not terminated when the group "
                "is scaled to zero (https://docs.aws.amazon.com/autoscaling/ec2/userguide/"
                "ec2-auto-scaling-instance-protection.html); accepted: protect_from_scale_in=false"]
    return []


def _ecs_termination_protection(props: Mapping[str, Any]) -> str | None:
    if read(props, "autoScalingGroupProvider.managedTerminationProtection") == "ENABLED":
        return ("its ECS capacity provider has managed_termination_protection=ENABLED: ECS keeps instances running "
                "tasks from being terminated on scale-in (https://docs.aws.amazon.com/AmazonECS/latest/"
                "developerguide/managed-termination-protection.html); accepted: DISABLED")
    return None


def _fleet_market(props: Mapping[str, Any]) -> Market:
    default = read(props, "targetCapacitySpecification.defaultTargetCapacityType")
    on_demand = number(read(props, "targetCapacitySpecification.onDemandTargetCapacity"))
    spot = number(read(props, "targetCapacitySpecification.spotTargetCapacity"))
    if UNKNOWN in (default, on_demand, spot):
        return Market(UNKNOWN)
    detail = f"defaultTargetCapacityType={default}"
    if default == "spot":
        return Market(MIXED if on_demand else SPOT, detail + (f", onDemandTargetCapacity={on_demand:g}" if on_demand else ""))
    return Market(MIXED if spot else ON_DEMAND, detail)


def _fleet_hazards(props: Mapping[str, Any], expires: datetime | None) -> list[str]:
    if read(props, "type") == "instant":
        return ["type=instant: an instant fleet hands its instances over once; no expiry terminates them and it cannot "
                "be deleted while they run (DeleteFleets, https://docs.aws.amazon.com/AWSEC2/latest/APIReference/"
                "API_DeleteFleets.html); accepted: type maintain or request with valid_until and "
                "terminate_instances_with_expiration=true"]
    return []


def _spot_fleet_market(props: Mapping[str, Any]) -> Market:
    on_demand = number(read(props, "onDemandTargetCapacity"))
    if on_demand is UNKNOWN:
        return Market(UNKNOWN)
    return Market(MIXED, f"onDemandTargetCapacity={on_demand:g}") if on_demand else Market(SPOT)


def _spot_fleet_metadata_gap(props: Mapping[str, Any]) -> str | None:
    if read_all(props, "launchSpecifications.*"):
        return ("a launch_specification cannot set metadata options; accepted: launch_template_configs naming a "
                "launch template with metadata_options={'http_tokens': 'required'}")
    return None


def _node_group_market(props: Mapping[str, Any]) -> Market:
    capacity = read(props, "capacityType", "ON_DEMAND")  # the EKS API's default (CreateNodegroup capacityType)
    if capacity is UNKNOWN:
        return Market(UNKNOWN)
    return Market(SPOT if capacity == "SPOT" else ON_DEMAND, f"capacityType={capacity}")


def _without_template(what: str) -> Any:
    def gap(props: Mapping[str, Any]) -> str | None:
        return None if read(props, "launchTemplate") is not None else what

    return gap


def _scaling(path: str) -> Any:
    return lambda props: count(props, path)


register(
    ComputeForm(
        token=rt.AWS_INSTANCE, cloud="aws", label="EC2 instance",
        templates=(_LAUNCH_TEMPLATE_REF,),
        market=_instance_market, spot_how="instance_market_options.market_type=spot",
        spot_cap="instanceMarketOptions.spotOptions.maxPrice",
        metadata=_METADATA, user_data=_INSTANCE_USER_DATA, disks=_INSTANCE_DISKS,
        deadlines=(_terminate_schedule("it"),),
        persistent=_persistent_market_options, cancels=CANCEL_SCHEDULE,
        public_ip=("associatePublicIpAddress",), security_groups=("vpcSecurityGroupIds", "securityGroups"),
        source="pulumi_aws ec2.Instance",
    ),
    ComputeForm(
        token=rt.AWS_SPOT_REQUEST, cloud="aws", label="spot instance request",
        templates=(_LAUNCH_TEMPLATE_REF,),
        market=lambda props: Market(SPOT, "a spot request"), spot_cap="spotPrice",
        metadata=_METADATA, user_data=_INSTANCE_USER_DATA, disks=_INSTANCE_DISKS,
        deadlines=(_terminate_schedule("its instance"),),
        persistent=_persistent_spot_request, cancels=CANCEL_SCHEDULE, hazards=_request_hazards,
        decoys=(("validUntil", "valid_until ends the request, not the instance it launched (RequestSpotInstances "
                 "ValidUntil)"),),
        public_ip=("associatePublicIpAddress",), security_groups=("vpcSecurityGroupIds", "securityGroups"),
        source="pulumi_aws ec2.SpotInstanceRequest; RequestSpotInstances",
    ),
    ComputeForm(
        token=rt.AWS_LAUNCH_TEMPLATE, cloud="aws", label="launch template", role=TEMPLATE,
        market=_instance_market, spot_how="instance_market_options={'market_type': 'spot'}",
        spot_cap="instanceMarketOptions.spotOptions.maxPrice",
        metadata=_METADATA, user_data=(UserData("userData", encoded=True),),
        disks=(Disk("blockDeviceMappings", "blockDeviceMappings.*", "ebs.encrypted", "ebs.kmsKeyId",
                    name_key="deviceName", only_with="ebs", missing=NO_MAPPINGS),),
        instance_tags=_lt_instance_tags, identity=("id", "name", "arn"),
        # An instance launched from it without market options of its own takes these (RunInstances: what the call
        # gives overrides the template): its persistent request is the instance's (``deadlines.persistent_request``).
        persistent=_persistent_market_options,
        public_ip=("networkInterfaces.*.associatePublicIpAddress",),
        security_groups=("vpcSecurityGroupIds", "securityGroupNames", "networkInterfaces.*.securityGroups"),
        source="pulumi_aws ec2.LaunchTemplate",
    ),
    ComputeForm(
        token=rt.AWS_LAUNCH_CONFIGURATION, cloud="aws", label="launch configuration", role=TEMPLATE,
        market=_spot_price_market, spot_how="spot_price", spot_cap="spotPrice",
        metadata=_METADATA, user_data=_INSTANCE_USER_DATA, disks=_INSTANCE_DISKS, tags="",
        identity=("id", "name", "arn"), public_ip=("associatePublicIpAddress",), security_groups=("securityGroups",),
        source="pulumi_aws ec2.LaunchConfiguration",
    ),
    ComputeForm(
        token=rt.AWS_AUTOSCALING_GROUP, cloud="aws", label="autoscaling group",
        instance_types=("mixedInstancesPolicy.launchTemplate.overrides.*.instanceType",),
        templates=(
            _LAUNCH_TEMPLATE_REF,
            TemplateRef("mixedInstancesPolicy.launchTemplate.launchTemplateSpecification", "launchTemplateId",
                        "launchTemplateName", "mixedInstancesPolicy", (rt.AWS_LAUNCH_TEMPLATE,)),
            TemplateRef("launchConfiguration", None, None, "launchConfiguration", (rt.AWS_LAUNCH_CONFIGURATION,)),
        ),
        capacity=_scaling("maxSize"), desired=_scaling("desiredCapacity"),
        weights=("mixedInstancesPolicy.launchTemplate.overrides.*.weightedCapacity",),
        market=_asg_market,
        spot_how="mixed_instances_policy.instances_distribution with on_demand_base_capacity=0 and "
        "on_demand_percentage_above_base_capacity=0, or a launch template with instance_market_options spot",
        spot_cap="mixedInstancesPolicy.instancesDistribution.spotMaxPrice",
        deadlines=(
            Deadline(kind="asg-schedule", link="autoscalingGroupName", requires={"maxSize": 0},
                     accepted=f"a one-time aws.autoscaling.Schedule on it with max_size=0 (and min_size, "
                     f"desired_capacity 0) starting no later than its {v.TAG_EXPIRES_AT} tag",
                     source="https://docs.aws.amazon.com/autoscaling/ec2/userguide/schedule_time.html"),
            Deadline(kind="scheduler", target="arn:aws:scheduler:::aws-sdk:autoscaling:updateAutoScalingGroup",
                     ids_key="AutoScalingGroupName", requires={"MaxSize": 0},
                     accepted="an EventBridge Scheduler schedule calling autoscaling:updateAutoScalingGroup with "
                     "MaxSize 0", source=SCHEDULER_DOC),
            Deadline(kind="scheduler", target="arn:aws:scheduler:::aws-sdk:autoscaling:deleteAutoScalingGroup",
                     ids_key="AutoScalingGroupName", requires={"ForceDelete": True},
                     accepted="one calling autoscaling:deleteAutoScalingGroup with ForceDelete", source=SCHEDULER_DOC),
        ),
        hazards=_asg_hazards, decoys=(LIFETIME_DECOY,),
        linked_hazards=(LinkedHazard(rt.AWS_ECS_CAPACITY_PROVIDER, "autoScalingGroupProvider.autoScalingGroupArn",
                                     "autoScalingGroupProvider", _ecs_termination_protection),),
        identity=("id", "name", "arn"),
        source="pulumi_aws autoscaling.Group; https://docs.aws.amazon.com/autoscaling/ec2/userguide/"
        "ec2-auto-scaling-mixed-instances-groups.html",
    ),
    ComputeForm(
        token=rt.AWS_FLEET, cloud="aws", label="EC2 Fleet",
        instance_types=("launchTemplateConfigs.*.overrides.*.instanceType",),
        templates=(TemplateRef("launchTemplateConfigs.*.launchTemplateSpecification", "launchTemplateId",
                               "launchTemplateName", "launchTemplateConfigs", (rt.AWS_LAUNCH_TEMPLATE,)),),
        capacity=_scaling("targetCapacitySpecification.totalTargetCapacity"),
        weights=("launchTemplateConfigs.*.overrides.*.weightedCapacity",),
        market=_fleet_market,
        spot_how="target_capacity_specification.default_target_capacity_type='spot' with no on-demand target",
        deadlines=(
            Deadline(kind="expiry", time="validUntil", flag="terminateInstancesWithExpiration",
                     accepted=f"valid_until no later than its {v.TAG_EXPIRES_AT} tag with "
                     "terminate_instances_with_expiration=true (CreateFleet)",
                     source="https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateFleet.html"),
            Deadline(kind="scheduler", target="arn:aws:scheduler:::aws-sdk:ec2:deleteFleets", ids_key="FleetIds",
                     requires={"TerminateInstances": True},
                     accepted="an EventBridge Scheduler schedule calling ec2:deleteFleets with TerminateInstances",
                     source=SCHEDULER_DOC),
        ),
        hazards=_fleet_hazards,
        decoys=(("terminateInstances", "terminate_instances acts when the stack deletes the fleet, not at a time"),),
        source="pulumi_aws ec2.Fleet; CreateFleet",
    ),
    ComputeForm(
        token=rt.AWS_SPOT_FLEET, cloud="aws", label="spot fleet request",
        instance_types=("launchSpecifications.*.instanceType", "launchTemplateConfigs.*.overrides.*.instanceType"),
        templates=(TemplateRef("launchTemplateConfigs.*.launchTemplateSpecification", "id", "name",
                               "launchTemplateConfigs", (rt.AWS_LAUNCH_TEMPLATE,)),),
        capacity=_scaling("targetCapacity"),
        weights=("launchSpecifications.*.weightedCapacity", "launchTemplateConfigs.*.overrides.*.weightedCapacity"),
        market=_spot_fleet_market, spot_how="no on_demand_target_capacity", spot_cap="spotPrice",
        metadata_gap=_spot_fleet_metadata_gap,
        user_data=(UserData("launchSpecifications.*.userData"),),
        disks=(Disk("launchSpecifications.rootBlockDevices", "launchSpecifications.*.rootBlockDevices.*"),
               Disk("launchSpecifications.ebsBlockDevices", "launchSpecifications.*.ebsBlockDevices.*",
                    name_key="deviceName")),
        deadlines=(
            Deadline(kind="expiry", time="validUntil", flag="terminateInstancesWithExpiration",
                     accepted=f"valid_until no later than its {v.TAG_EXPIRES_AT} tag with "
                     "terminate_instances_with_expiration=true (RequestSpotFleet)",
                     source="https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_SpotFleetRequestConfigData.html"),
            Deadline(kind="scheduler", target="arn:aws:scheduler:::aws-sdk:ec2:cancelSpotFleetRequests",
                     ids_key="SpotFleetRequestIds", requires={"TerminateInstances": True},
                     accepted="an EventBridge Scheduler schedule calling ec2:cancelSpotFleetRequests with "
                     "TerminateInstances", source=SCHEDULER_DOC),
        ),
        public_ip=("launchSpecifications.*.associatePublicIpAddress",),
        security_groups=("launchSpecifications.*.vpcSecurityGroupIds",),
        source="pulumi_aws ec2.SpotFleetRequest; RequestSpotFleet",
    ),
    ComputeForm(
        token=rt.AWS_EKS_NODE_GROUP, cloud="aws", label="EKS node group",
        instance_types=("instanceTypes",), default_types=("t3.medium",),  # the SDK docstring's default
        templates=(_LAUNCH_TEMPLATE_REF,),
        capacity=_scaling("scalingConfig.maxSize"), desired=_scaling("scalingConfig.desiredSize"),
        market=_node_group_market, spot_how="capacity_type='SPOT'",
        metadata_gap=_without_template(
            "a node group without a launch template cannot set metadata options (EKS builds its own template); "
            "accepted: launch_template naming a launch template with metadata_options={'http_tokens': 'required'}"),
        disk_gap=_without_template(
            "its disk_size volumes are created by EKS with no encryption setting in the node group (the account's "
            "EBS default decides, which a preview cannot see); accepted: a launch template with encrypted "
            "block_device_mappings"),
        deadlines=(
            Deadline(kind="scheduler", target="arn:aws:scheduler:::aws-sdk:eks:deleteNodegroup", ids_key="NodegroupName",
                     accepted=f"a one-time at(...) EventBridge Scheduler schedule calling eks:deleteNodegroup for it, "
                     f"no later than its {v.TAG_EXPIRES_AT} tag (a managed node group keeps at least one node of "
                     "capacity: its scaling maxSize is at least 1, API_NodegroupScalingConfig)",
                     source=SCHEDULER_DOC),
        ),
        identity=("id", "nodeGroupName", "arn"),
        source="pulumi_aws eks.NodeGroup; https://docs.aws.amazon.com/eks/latest/APIReference/API_NodegroupScalingConfig.html",
    ),
)
