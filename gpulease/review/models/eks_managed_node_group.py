"""``eks.ManagedNodeGroup`` (pulumi/pulumi-eks, nodejs/eks/nodes/nodegroup.ts ``createManagedNodeGroup``): an
``aws:eks/nodeGroup:NodeGroup``, with the node role given (``nodeRole``/``nodeRoleArn``) or the cluster's first
instance role. Outputs (pulumi_eks/managed_node_group.py): ``nodeGroup`` (a resource), ``placementGroupName``.
Not modelled: the custom launch template it builds for kubelet arguments, bootstrap options or user data."""

from __future__ import annotations

from typing import Any

from gpulease.review.mock_ids import ACCOUNT_ID
from gpulease.review.mock_registry import ComponentBuild, ComponentModel, register_model
from gpulease.review.models import eks_nodes


def build(b: ComponentBuild) -> dict[str, Any]:
    cluster_name, core = eks_nodes.cluster_of(b)
    roles = core.get("instanceRoles") or []
    role = b.inputs.get("nodeRole") or (roles[0] if roles else None)
    role_arn = b.inputs.get("nodeRoleArn") or (f"arn:aws:iam::{ACCOUNT_ID}:role/{role}" if role else None)
    subnets = core.get("privateSubnetIds") or core.get("subnetIds") or []
    group = eks_nodes.managed(b, b.name, b.inputs, cluster_name=cluster_name, role_arn=role_arn, subnet_ids=subnets)
    return {"nodeGroup": group.ref(), "placementGroupName": ""}


register_model(ComponentModel("eks:index:ManagedNodeGroup", build, "pulumi/pulumi-eks nodejs/eks/nodes/nodegroup.ts"))
