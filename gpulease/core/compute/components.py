"""Multi-language components whose children the pack judges instead of the component itself.

A remote component (``pulumi_eks``, ``pulumi_awsx``) registers its own inputs (``instanceType``, ``desiredCapacity``)
and, in the component provider's process, the resources that run them. Under a real engine those children reach
the pack; offline, the review's model of each component listed here (``gpulease.review.models``) registers the
same children. Its inputs are then no unjudged GPU compute: the children carry the deadline, market and cost. A
component not listed here is scanned like any other type (and offline, the review is partial).
"""

from __future__ import annotations

MODELLED_COMPONENTS = frozenset({
    "eks:index:Cluster",
    "eks:index:NodeGroup",
    "eks:index:NodeGroupV2",
    "eks:index:ManagedNodeGroup",
    "awsx:ec2:Vpc",
    "awsx:ecr:Repository",
    "awsx:ecs:EC2Service",
    "awsx:ecs:FargateService",
    "awsx:lb:ApplicationLoadBalancer",
    "awsx:lb:NetworkLoadBalancer",
})
"""Type tokens of the components the review models; a test keeps it equal to ``gpulease.review.mock_registry``."""
