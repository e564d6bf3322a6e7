"""An EKS managed node group of g5 nodes with neither a launch template nor a capacity type: on-demand by the EKS
default, its metadata options and disk encryption out of its reach, and nothing ends it at its deadline."""

import pulumi
import pulumi_aws as aws

expires = pulumi.Config("corpus").require("expiresAt")
tags = {
    "gpulease:owner": "dee@example.com", "gpulease:project": "serving", "gpulease:experiment": "gpu-nodes",
    "gpulease:cost-center": "research", "gpulease:budget-usd": "1000", "gpulease:expires-at": expires,
    "gpulease:max-runtime-hours": "8", "gpulease:managed-by": "gpulease",
}

aws.eks.NodeGroup(
    "gpu-nodes",
    cluster_name="corpus-cluster",
    node_role_arn="arn:aws:iam::123456789012:role/corpus-nodes",
    subnet_ids=["subnet-0a1b2c3d4e5f60718"],
    instance_types=["g5.12xlarge"],
    scaling_config={"min_size": 0, "desired_size": 1, "max_size": 4},
    tags=tags,
)
