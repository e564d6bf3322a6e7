"""``eks.NodeGroup``, the self-managed node group of launch configurations (pulumi/pulumi-eks, nodejs/eks/nodes/
nodegroup.ts ``createNodeGroup``): a security group unless one is given, a launch configuration and an
``aws:cloudformation/stack:Stack`` whose template holds the ``AWS::AutoScaling::AutoScalingGroup``. Outputs
(pulumi_eks/node_group.py): ``autoScalingGroupName``, ``cfnStack``, the security groups."""

from __future__ import annotations

from typing import Any

from gpulease.review.mock_registry import ComponentBuild, ComponentModel, register_model
from gpulease.review.models import eks_nodes


def build(b: ComponentBuild) -> dict[str, Any]:
    cluster_name, core = eks_nodes.cluster_of(b)
    sg = b.inputs.get("nodeSecurityGroup")
    made = None if sg else eks_nodes.node_security_group(b, b.name, core.get("vpcId"), cluster_name)
    profile = b.inputs.get("instanceProfile") or core.get("instanceProfile") or f"{cluster_name}-instanceProfile"
    subnets = b.inputs.get("nodeSubnetIds") or core.get("privateSubnetIds") or core.get("subnetIds") or []
    _, stack = eks_nodes.self_managed_v1(b, b.name, b.inputs, cluster_name=cluster_name, profile=profile,
                                         security_group=sg or made.id, subnet_ids=subnets)
    return {"autoScalingGroupName": f"{b.name}-nodes-NodeGroup", "cfnStack": stack.ref(),
            "extraNodeSecurityGroups": b.inputs.get("extraNodeSecurityGroups") or [],
            "nodeSecurityGroup": made.ref() if made else None, "nodeSecurityGroupId": sg or made.id}


register_model(ComponentModel("eks:index:NodeGroup", build, "pulumi/pulumi-eks nodejs/eks/nodes/nodegroup.ts"))
