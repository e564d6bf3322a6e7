"""The ``pulumi_aws_native`` (AWS Cloud Control) equivalents of the AWS compute forms: EC2 instances and launch
templates, autoscaling groups, EKS node groups, AWS Batch compute environments, SageMaker endpoints, endpoint
configurations, notebook instances and apps. Inputs are CloudFormation's properties in engine form (camelCase,
``pulumi_aws_native`` 1.84's getters); tags are lists of ``{key, value}`` (EKS and Batch: maps). Each entry judges
like its ``pulumi_aws`` twin; the deadline is the same EventBridge Scheduler call (an ``aws.scheduler.Schedule``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from gpulease.core import resources as rt
from gpulease.core.compute import aws_forms as a
from gpulease.core.compute import aws_ml_forms as ml
from gpulease.core.compute.forms import (
    TEMPLATE,
    ComputeForm,
    Deadline,
    Disk,
    Market,
    Metadata,
    TemplateRef,
    UserData,
    form_of,
    register,
)
from gpulease.core.compute.paths import UNKNOWN, count, read, read_all

INSTANCE = "aws-native:ec2:Instance"
LAUNCH_TEMPLATE = rt.AWS_NATIVE_LAUNCH_TEMPLATE
AUTOSCALING_GROUP = "aws-native:autoscaling:AutoScalingGroup"
NODE_GROUP = "aws-native:eks:Nodegroup"
BATCH_ENVIRONMENT = "aws-native:batch:ComputeEnvironment"
ENDPOINT = "aws-native:sagemaker:Endpoint"
ENDPOINT_CONFIG = "aws-native:sagemaker:EndpointConfig"
NOTEBOOK = "aws-native:sagemaker:NotebookInstance"
APP = "aws-native:sagemaker:App"
EC2_FLEET = "aws-native:ec2:Ec2Fleet"
SPOT_FLEET = "aws-native:ec2:SpotFleet"

TEMPLATES = (LAUNCH_TEMPLATE, rt.AWS_LAUNCH_TEMPLATE)
_DATA = "launchTemplateData"
_LT_REF = TemplateRef("launchTemplate", "launchTemplateId", "launchTemplateName", "launchTemplate", TEMPLATES)
_NO_MAPPINGS = (
    "no blockDeviceMappings: the image's own mappings decide whether its volumes are encrypted, which a preview "
    "cannot see; accepted: block_device_mappings with ebs encrypted=true for the root device"
)


def _metadata(prefix: str) -> Metadata:
    return Metadata(tokens=f"{prefix}metadataOptions.httpTokens", endpoint=f"{prefix}metadataOptions.httpEndpoint",
                    hop_limit=f"{prefix}metadataOptions.httpPutResponseHopLimit",
                    how="metadata_options={'http_tokens': 'required'}", unset=a.IMDS_UNSET)


def _mappings(path: str) -> Disk:
    return Disk("blockDeviceMappings", f"{path}.*", "ebs.encrypted", "ebs.kmsKeyId", name_key="deviceName",
                only_with="ebs", missing=_NO_MAPPINGS)


def _lt_market(props: Mapping[str, Any]) -> Market:
    data = read(props, _DATA)
    return Market(UNKNOWN) if data is UNKNOWN else a._instance_market(data or {})


def _lt_persistent(props: Mapping[str, Any], expires: datetime | None) -> str | None:
    """The template's persistent request (``launchTemplateData.instanceMarketOptions``), as its pulumi_aws twin's."""
    data = read(props, _DATA)
    return a._persistent_market_options(data, expires) if isinstance(data, Mapping) else None


def _no_market_options(props: Mapping[str, Any], expires: datetime | None) -> str | None:
    return None  # AWS::EC2::Instance has no market options: its persistent request is its launch template's


def _lt_instance_tags(props: Mapping[str, Any]) -> Mapping[str, Any]:
    tags: dict[str, Any] = {}
    for spec in read_all(props, f"{_DATA}.tagSpecifications.*"):
        if isinstance(spec, Mapping) and spec.get("resourceType") == "instance":
            tags.update(rt.tag_map(spec.get("tags")))
    return tags


def _asg_hazards(props: Mapping[str, Any], expires: datetime | None) -> list[str]:
    if rt.flag(read(props, "newInstancesProtectedFromScaleIn")):
        return ["new_instances_protected_from_scale_in=true: protected instances are not terminated when the group "
                "is scaled to zero (https://docs.aws.amazon.com/autoscaling/ec2/userguide/"
                "ec2-auto-scaling-instance-protection.html); accepted: false"]
    return []


def _fleet_tags(props: Mapping[str, Any]) -> Mapping[str, Any]:
    """An EC2 Fleet's tags: its ``tagSpecifications`` for ``resourceType`` fleet (and instance, which an instant
    fleet takes); AWS::EC2::EC2Fleet has no top-level ``Tags`` (pulumi_aws_native ec2.Ec2Fleet's docstring of
    ``tag_specifications``, https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateFleet.html)."""
    tags: dict[str, Any] = {}
    for spec in read_all(props, "tagSpecifications.*"):
        if isinstance(spec, Mapping) and spec.get("resourceType") in ("fleet", "instance"):
            tags.update(rt.tag_map(spec.get("tags")))
    return tags


_SPOT = "spotFleetRequestConfigData."
"""AWS::EC2::SpotFleet holds the whole request in ``SpotFleetRequestConfigData`` (the RequestSpotFleet
configuration, https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_SpotFleetRequestConfigData.html)."""


def _spot_fleet_market(props: Mapping[str, Any]) -> Market:
    return a._spot_fleet_market(read(props, _SPOT[:-1]) or {})


def _spot_fleet_metadata_gap(props: Mapping[str, Any]) -> str | None:
    config = read(props, _SPOT[:-1])
    return a._spot_fleet_metadata_gap(config) if isinstance(config, Mapping) else None


def _nested(deadlines: tuple[Deadline, ...], prefix: str) -> tuple[Deadline, ...]:
    """The ``pulumi_aws`` twin's deadlines with its expiry inputs under ``prefix``."""
    return tuple(replace(d, time=f"{prefix}{d.time}", flag=f"{prefix}{d.flag}") if d.kind == "expiry" else d
                 for d in deadlines)


def _scaling(path: str) -> Any:
    return lambda props: count(props, path)


register(
    ComputeForm(
        token=INSTANCE, cloud="aws", label="EC2 instance", templates=(_LT_REF,),
        spot_how="a launch template with instance_market_options market_type spot (aws-native ec2.Instance has no "
        "market option)",
        metadata=_metadata(""), user_data=(UserData("userData", encoded=True),),
        disks=(_mappings("blockDeviceMappings"),),
        deadlines=(a._terminate_schedule("it"),),
        persistent=_no_market_options, cancels=a.CANCEL_SCHEDULE,
        public_ip=("networkInterfaces.*.associatePublicIpAddress",),
        security_groups=("securityGroupIds", "securityGroups"), identity=("id", "instanceId"),
        source="pulumi_aws_native ec2.Instance (AWS::EC2::Instance)",
    ),
    ComputeForm(
        token=LAUNCH_TEMPLATE, cloud="aws", label="launch template", role=TEMPLATE,
        instance_types=(f"{_DATA}.instanceType",), market=_lt_market,
        spot_how="launch_template_data.instance_market_options={'market_type': 'spot'}",
        spot_cap=f"{_DATA}.instanceMarketOptions.spotOptions.maxPrice",
        metadata=_metadata(f"{_DATA}."), user_data=(UserData(f"{_DATA}.userData", encoded=True),),
        disks=(_mappings(f"{_DATA}.blockDeviceMappings"),), tags="",
        instance_tags=_lt_instance_tags, identity=("id", "launchTemplateId", "launchTemplateName"),
        persistent=_lt_persistent,
        public_ip=(f"{_DATA}.networkInterfaces.*.associatePublicIpAddress",),
        security_groups=(f"{_DATA}.securityGroupIds", f"{_DATA}.securityGroups"),
        source="pulumi_aws_native ec2.LaunchTemplate (AWS::EC2::LaunchTemplate)",
    ),
    ComputeForm(
        token=AUTOSCALING_GROUP, cloud="aws", label="autoscaling group",
        instance_types=("mixedInstancesPolicy.launchTemplate.overrides.*.instanceType",),
        templates=(_LT_REF, TemplateRef("mixedInstancesPolicy.launchTemplate.launchTemplateSpecification",
                                        "launchTemplateId", "launchTemplateName", "mixedInstancesPolicy", TEMPLATES),
                   TemplateRef("launchConfigurationName", None, None, "launchConfigurationName",
                               (rt.AWS_LAUNCH_CONFIGURATION,))),
        capacity=_scaling("maxSize"), desired=_scaling("desiredCapacity"),
        weights=("mixedInstancesPolicy.launchTemplate.overrides.*.weightedCapacity",),
        market=a._asg_market, spot_how=form_of(rt.AWS_AUTOSCALING_GROUP).spot_how,  # type: ignore[union-attr]
        spot_cap="mixedInstancesPolicy.instancesDistribution.spotMaxPrice",
        deadlines=form_of(rt.AWS_AUTOSCALING_GROUP).deadlines,  # type: ignore[union-attr]
        hazards=_asg_hazards, decoys=(a.LIFETIME_DECOY,), identity=("id", "autoScalingGroupName"),
        source="pulumi_aws_native autoscaling.AutoScalingGroup (AWS::AutoScaling::AutoScalingGroup)",
    ),
    ComputeForm(
        token=NODE_GROUP, cloud="aws", label="EKS node group",
        instance_types=("instanceTypes",), default_types=("t3.medium",),
        templates=(TemplateRef("launchTemplate", "id", "name", "launchTemplate", TEMPLATES),),
        capacity=_scaling("scalingConfig.maxSize"), desired=_scaling("scalingConfig.desiredSize"),
        market=a._node_group_market, spot_how="capacity_type='SPOT'",
        metadata_gap=form_of(rt.AWS_EKS_NODE_GROUP).metadata_gap,  # type: ignore[union-attr]
        disk_gap=form_of(rt.AWS_EKS_NODE_GROUP).disk_gap,  # type: ignore[union-attr]
        deadlines=form_of(rt.AWS_EKS_NODE_GROUP).deadlines,  # type: ignore[union-attr]
        identity=("id", "nodegroupName", "arn"),
        source="pulumi_aws_native eks.Nodegroup (AWS::EKS::Nodegroup)",
    ),
    ComputeForm(
        token=BATCH_ENVIRONMENT, cloud="aws", label="AWS Batch compute environment",
        type_reader=lambda props: read_all(props, "computeResources.instanceTypes.*"),
        templates=(TemplateRef("computeResources.launchTemplate", "launchTemplateId", "launchTemplateName",
                               "computeResources", TEMPLATES),),
        capacity=lambda props: ml.vcpu_capacity(count(props, "computeResources.maxvCpus"),
                                                read_all(props, "computeResources.instanceTypes.*")),
        desired=lambda props: ml.vcpu_capacity(count(props, "computeResources.desiredvCpus"),
                                               read_all(props, "computeResources.instanceTypes.*")),
        unsized=ml.batch_unsized("computeResources.maxvCpus"),
        market=lambda props: ml.batch_market(read(props, "computeResources.type"), "computeResources.type"),
        spot_how="compute_resources.type='SPOT'", deadlines=ml.batch_deadlines("ComputeEnvironment"),
        metadata_gap=ml.batch_metadata_gap, disk_gap=ml.batch_disk_gap,
        identity=("id", "computeEnvironmentName", "computeEnvironmentArn"),
        source="pulumi_aws_native batch.ComputeEnvironment (AWS::Batch::ComputeEnvironment)",
    ),
    ComputeForm(
        token=ENDPOINT_CONFIG, cloud="aws", label="SageMaker endpoint configuration", role=TEMPLATE,
        instance_types=("productionVariants.*.instanceType", "shadowProductionVariants.*.instanceType"),
        capacity=ml.endpoint_variants, market=ml.on_demand, tags="",
        identity=("id", "endpointConfigName", "endpointConfigArn"),
        source="pulumi_aws_native sagemaker.EndpointConfig (AWS::SageMaker::EndpointConfig)",
    ),
    ComputeForm(
        token=ENDPOINT, cloud="aws", label="SageMaker endpoint", instance_types=(),
        templates=(TemplateRef("endpointConfigName", None, None, "endpointConfigName", (ENDPOINT_CONFIG,)),),
        capacity_from_templates=True, unsized=form_of(ml.SAGEMAKER_ENDPOINT).unsized,  # type: ignore[union-attr]
        market=ml.on_demand, spot_how=ml.SAGEMAKER_NO_SPOT,
        deadlines=form_of(ml.SAGEMAKER_ENDPOINT).deadlines,  # type: ignore[union-attr]
        identity=("id", "endpointName", "endpointArn"),
        source="pulumi_aws_native sagemaker.Endpoint (AWS::SageMaker::Endpoint)",
    ),
    ComputeForm(
        token=NOTEBOOK, cloud="aws", label="SageMaker notebook instance", market=ml.on_demand,
        spot_how=ml.SAGEMAKER_NO_SPOT,
        deadlines=form_of(ml.SAGEMAKER_NOTEBOOK).deadlines,  # type: ignore[union-attr]
        identity=("id", "notebookInstanceName", "notebookInstanceArn"),
        source="pulumi_aws_native sagemaker.NotebookInstance (AWS::SageMaker::NotebookInstance)",
    ),
    ComputeForm(
        token=APP, cloud="aws", label="SageMaker Studio app", instance_types=("resourceSpec.instanceType",),
        market=ml.on_demand, spot_how=ml.SAGEMAKER_NO_SPOT,
        deadlines=form_of(ml.SAGEMAKER_APP).deadlines,  # type: ignore[union-attr]
        identity=("id", "appName", "appArn"),
        source="pulumi_aws_native sagemaker.App (AWS::SageMaker::App)",
    ),
    ComputeForm(
        token=EC2_FLEET, cloud="aws", label="EC2 Fleet",
        instance_types=("launchTemplateConfigs.*.overrides.*.instanceType",),
        templates=(TemplateRef("launchTemplateConfigs.*.launchTemplateSpecification", "launchTemplateId",
                               "launchTemplateName", "launchTemplateConfigs", TEMPLATES),),
        capacity=_scaling("targetCapacitySpecification.totalTargetCapacity"),
        weights=("launchTemplateConfigs.*.overrides.*.weightedCapacity",),
        market=a._fleet_market, spot_how=form_of(rt.AWS_FLEET).spot_how,  # type: ignore[union-attr]
        deadlines=form_of(rt.AWS_FLEET).deadlines,  # type: ignore[union-attr]
        hazards=a._fleet_hazards, decoys=form_of(rt.AWS_FLEET).decoys,  # type: ignore[union-attr]
        tags=_fleet_tags, identity=("id", "fleetId"),
        source="pulumi_aws_native ec2.Ec2Fleet (AWS::EC2::EC2Fleet); CreateFleet",
    ),
    ComputeForm(
        token=SPOT_FLEET, cloud="aws", label="spot fleet request",
        instance_types=(f"{_SPOT}launchSpecifications.*.instanceType",
                        f"{_SPOT}launchTemplateConfigs.*.overrides.*.instanceType"),
        templates=(TemplateRef(f"{_SPOT}launchTemplateConfigs.*.launchTemplateSpecification", "launchTemplateId",
                               "launchTemplateName", _SPOT[:-1], TEMPLATES),),
        capacity=_scaling(f"{_SPOT}targetCapacity"),
        weights=(f"{_SPOT}launchSpecifications.*.weightedCapacity",
                 f"{_SPOT}launchTemplateConfigs.*.overrides.*.weightedCapacity"),
        market=_spot_fleet_market, spot_how="no on_demand_target_capacity", spot_cap=f"{_SPOT}spotPrice",
        metadata_gap=_spot_fleet_metadata_gap,
        user_data=(UserData(f"{_SPOT}launchSpecifications.*.userData", encoded=True),),
        disks=(Disk("launchSpecifications.blockDeviceMappings", f"{_SPOT}launchSpecifications.*.blockDeviceMappings.*",
                    "ebs.encrypted", "ebs.kmsKeyId", name_key="deviceName", only_with="ebs"),),
        deadlines=_nested(form_of(rt.AWS_SPOT_FLEET).deadlines, _SPOT),  # type: ignore[union-attr]
        public_ip=(f"{_SPOT}launchSpecifications.*.networkInterfaces.*.associatePublicIpAddress",),
        security_groups=(f"{_SPOT}launchSpecifications.*.securityGroups.*.groupId",),
        source="pulumi_aws_native ec2.SpotFleet (AWS::EC2::SpotFleet); RequestSpotFleet",
    ),
)
