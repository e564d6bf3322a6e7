"""The node groups ``pulumi_eks`` creates, as its source creates them (pulumi/pulumi-eks, nodejs/eks/nodes/
nodegroup.ts: ``createNodeGroup``, ``createNodeGroupV2``, ``createManagedNodeGroup``), shared by the Cluster and the
node group models. Defaults from the same source: t3.medium (nodes/instances.ts ``DEFAULT_INSTANCE_TYPE``),
desired 2, min 1, max 2.

Not modelled: the AMI lookup (an SSM parameter under a real engine; here an id derived from the name), the user
data (a base64 bootstrap script), the aws-auth config map and access entries.
"""

from __future__ import annotations

import json
from typing import Any

from gpulease.review.mock_ids import _hex
from gpulease.review.mock_registry import Child, ComponentBuild

DEFAULT_INSTANCE_TYPE = "t3.medium"


def _ami(name: str) -> str:
    return f"ami-{_hex('eks-node-ami', name)}"


def _sizes(opts: dict[str, Any]) -> tuple[Any, Any, Any]:
    def pick(key: str, default: int) -> Any:
        return opts[key] if opts.get(key) is not None else default
    return pick("desiredCapacity", 2), pick("minSize", 1), pick("maxSize", 2)


def _asg_tags(cluster_name: Any, tags: dict[str, Any] | None) -> list[dict[str, Any]]:
    merged = {"Name": f"{cluster_name}-worker", f"kubernetes.io/cluster/{cluster_name}": "owned", **(tags or {})}
    return [{"key": k, "value": v, "propagateAtLaunch": True} for k, v in merged.items()]


def node_security_group(b: ComponentBuild, name: str, vpc_id: Any, cluster_name: Any) -> Child:
    return b.child("aws:ec2/securityGroup:SecurityGroup", f"{name}-nodeSecurityGroup", {
        "vpcId": vpc_id, "revokeRulesOnDelete": True,
        "tags": {"Name": f"{name}-nodeSecurityGroup", f"kubernetes.io/cluster/{cluster_name}": "owned"}})


def _root_volume(opts: dict[str, Any]) -> dict[str, Any]:
    keys = {"encrypted": "nodeRootVolumeEncrypted", "volumeSize": "nodeRootVolumeSize",
            "volumeType": "nodeRootVolumeType", "iops": "nodeRootVolumeIops",
            "throughput": "nodeRootVolumeThroughput", "deleteOnTermination": "nodeRootVolumeDeleteOnTermination"}
    return {k: opts[v] for k, v in keys.items() if opts.get(v) is not None}


def self_managed_v2(b: ComponentBuild, name: str, opts: dict[str, Any], *, cluster_name: Any, profile: Any,
                    security_group: Any, subnet_ids: Any) -> tuple[Child, Child]:
    """A launch template and an autoscaling group (``createNodeGroupV2``)."""
    ebs = _root_volume(opts)
    for key in ("encrypted", "deleteOnTermination"):
        if key in ebs:
            ebs[key] = "true" if ebs[key] else "false"  # the launch template takes these as strings
    spot = opts.get("spotPrice")
    template = b.child("aws:ec2/launchTemplate:LaunchTemplate", f"{name}-launchTemplate", {
        "imageId": opts.get("amiId") or _ami(name),
        "instanceType": opts.get("instanceType") or DEFAULT_INSTANCE_TYPE,
        "iamInstanceProfile": {"name": profile},
        "keyName": opts.get("keyName"),
        "instanceMarketOptions": {"marketType": "spot", "spotOptions": {"maxPrice": spot}} if spot else None,
        "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": ebs}] if ebs else [],
        "networkInterfaces": [{"associatePublicIpAddress": "false" if opts.get("nodeAssociatePublicIpAddress") is False
                               else "true",
                               "securityGroups": [security_group, *(opts.get("extraNodeSecurityGroups") or [])]}],
        "metadataOptions": opts.get("metadataOptions"),
        "userData": "",
        "tagSpecifications": opts.get("launchTemplateTagSpecifications"),
    })
    desired, low, high = _sizes(opts)
    group = b.child("aws:autoscaling/group:Group", name, {
        "minSize": low, "maxSize": high, "desiredCapacity": desired,
        "launchTemplate": {"name": template.outputs.get("name"), "version": str(template.outputs.get("latestVersion", 1))},
        "vpcZoneIdentifiers": subnet_ids,
        "instanceRefresh": {"strategy": "Rolling",
                            "preferences": {"minHealthyPercentage": opts.get("minRefreshPercentage") or 50}},
        "tags": _asg_tags(cluster_name, opts.get("autoScalingGroupTags")),
        "defaultInstanceWarmup": opts.get("defaultInstanceWarmup"),
    }, depends={"launchTemplate": [template]}, ignore_changes=["desiredCapacity"] if opts.get("ignoreScalingChanges") else None)
    return template, group


def self_managed_v1(b: ComponentBuild, name: str, opts: dict[str, Any], *, cluster_name: Any, profile: Any,
                    security_group: Any, subnet_ids: Any) -> tuple[Child, Child]:
    """A launch configuration and a CloudFormation stack whose template holds the autoscaling group
    (``createNodeGroup``)."""
    root = _root_volume(opts)
    config = b.child("aws:ec2/launchConfiguration:LaunchConfiguration", f"{name}-nodeLaunchConfiguration", {
        "associatePublicIpAddress": opts.get("nodeAssociatePublicIpAddress") is not False,
        "imageId": opts.get("amiId") or _ami(name),
        "instanceType": opts.get("instanceType") or DEFAULT_INSTANCE_TYPE,
        "iamInstanceProfile": profile, "keyName": opts.get("keyName"),
        "securityGroups": [security_group, *(opts.get("extraNodeSecurityGroups") or [])],
        "spotPrice": opts.get("spotPrice"), "rootBlockDevice": root or None,
        "userData": "", "enableMonitoring": opts.get("enableDetailedMonitoring"),
    })
    desired, low, high = _sizes(opts)
    tags = "".join(f"\n                          - Key: {t['key']}\n                            Value: {t['value']}\n"
                   "                            PropagateAtLaunch: 'true'"
                   for t in _asg_tags(cluster_name, opts.get("autoScalingGroupTags")))
    body = f"""
                AWSTemplateFormatVersion: '2010-09-09'
                Outputs:
                    NodeGroup:
                        Value: !Ref NodeGroup
                Resources:
                    NodeGroup:
                        Type: AWS::AutoScaling::AutoScalingGroup
                        Properties:
                          DesiredCapacity: {desired}
                          LaunchConfigurationName: {config.id}
                          MinSize: {low}
                          MaxSize: {high}
                          VPCZoneIdentifier: {json.dumps(subnet_ids)}
                          Tags:{tags}
                        UpdatePolicy:
                          AutoScalingRollingUpdate:
                            MinInstancesInService: '{0 if opts.get("spotPrice") else 1}'
                            MaxBatchSize: '1'
                """
    stack = b.child("aws:cloudformation/stack:Stack", f"{name}-nodes", {
        "name": f"{name}-{_hex('cfn', name, length=8)}", "templateBody": body,
        "tags": {"Name": f"{name}-nodes", **(opts.get("cloudFormationTags") or {})}}, depends={"templateBody": [config]})
    return config, stack


def managed(b: ComponentBuild, name: str, opts: dict[str, Any], *, cluster_name: Any, role_arn: Any,
            subnet_ids: Any) -> Child:
    """An EKS managed node group (``createManagedNodeGroup``); scaling defaults desired 2, min 1, max 2."""
    scaling = opts.get("scalingConfig") or {}
    keys = ("amiType", "capacityType", "diskSize", "forceUpdateVersion", "instanceTypes", "labels",
            "releaseVersion", "remoteAccess", "tags", "taints", "version", "nodeGroupName", "nodeGroupNamePrefix",
            "launchTemplate", "updateConfig")
    return b.child("aws:eks/nodeGroup:NodeGroup", name, {
        **{k: opts.get(k) for k in keys},
        "clusterName": opts.get("clusterName") or cluster_name,
        "nodeRoleArn": opts.get("nodeRoleArn") or role_arn,
        "scalingConfig": {"desiredSize": scaling.get("desiredSize", 2), "minSize": scaling.get("minSize", 1),
                          "maxSize": scaling.get("maxSize", 2)},
        "subnetIds": opts.get("subnetIds") or subnet_ids,
    }, depends={"launchTemplate": b.input_dependencies("launchTemplate")},
        ignore_changes=["scalingConfig.desiredSize"] if opts.get("ignoreScalingChanges") else None)


def cluster_of(b: ComponentBuild) -> tuple[Any, dict[str, Any]]:
    """The cluster's name and the cluster's outputs a node group reads, from its ``cluster`` input: a ``Cluster``
    (a reference: its URN) or its ``core`` data (``CoreDataArgs``, the aws cluster as its id, the name)."""
    cluster = b.inputs.get("cluster")
    if isinstance(cluster, str) and cluster.startswith("urn:"):
        cluster = b.outputs_of(cluster).get("core") or {}
    if isinstance(cluster, dict):
        return cluster.get("cluster"), cluster
    return cluster, {}
