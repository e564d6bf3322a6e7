"""``eks.NodeGroupV2``, the self-managed node group of a launch template and an autoscaling group (pulumi/pulumi-eks,
nodejs/eks/nodes/nodegroup.ts ``createNodeGroupV2``). Outputs (pulumi_eks/node_group_v2.py): ``autoScalingGroup``
(a resource), the security groups."""

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
    _, group = eks_nodes.self_managed_v2(b, b.name, b.inputs, cluster_name=cluster_name, profile=profile,
                                         security_group=sg or made.id, subnet_ids=subnets)
    return {"autoScalingGroup": group.ref(), "extraNodeSecurityGroups": b.inputs.get("extraNodeSecurityGroups") or [],
            "nodeSecurityGroup": made.ref() if made else None, "nodeSecurityGroupId": sg or made.id}


register_model(ComponentModel("eks:index:NodeGroupV2", build, "pulumi/pulumi-eks nodejs/eks/nodes/nodegroup.ts"))
