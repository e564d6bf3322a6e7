"""Karpenter on EKS through pulumi_kubernetes: a v1 NodePool of spot p4d.24xlarge nodes limited to 16 GPUs, with
the EC2NodeClass it launches from carrying the accounting tags (the shape of the Karpenter examples); a v1beta1
NodePool allowing the g5 family with no limits, from a v1beta1 EC2NodeClass leaving metadata tokens at
Karpenter's default (required); and a Deployment asking for a GPU, a type no compute form reads."""

import pulumi
import pulumi_kubernetes as k8s

expires = pulumi.Config("corpus").require("expiresAt")
tags = {
    "gpulease:owner": "kai@example.com", "gpulease:project": "k8s", "gpulease:experiment": "k8s",
    "gpulease:cost-center": "research", "gpulease:budget-usd": "2000", "gpulease:expires-at": expires,
    "gpulease:max-runtime-hours": "4", "gpulease:checkpoint-uri": "s3://corpus-k8s-ckpt/runs/",
    "gpulease:managed-by": "gpulease",
}
k8s.apiextensions.CustomResource(
    "gpu-class", api_version="karpenter.k8s.aws/v1", kind="EC2NodeClass", metadata={"name": "gpu"},
    spec={"role": "KarpenterNodeRole", "amiSelectorTerms": [{"alias": "al2023@latest"}], "tags": tags,
          "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "corpus"}}],
          "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "corpus"}}],
          "metadataOptions": {"httpTokens": "optional"}})
k8s.apiextensions.CustomResource(
    "a100s", api_version="karpenter.sh/v1", kind="NodePool", metadata={"name": "a100s"},
    spec={"template": {"spec": {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
        "expireAfter": "4h",
        "requirements": [
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p4d.24xlarge"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]}},
        "limits": {"cpu": "1000", "nvidia.com/gpu": 16}})
k8s.apiextensions.CustomResource(
    "legacy-class", api_version="karpenter.k8s.aws/v1beta1", kind="EC2NodeClass", metadata={"name": "legacy"},
    spec={"role": "KarpenterNodeRole", "amiFamily": "AL2", "tags": tags,
          "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "corpus"}}],
          "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "corpus"}}]})
k8s.apiextensions.CustomResource(
    "g5s", api_version="karpenter.sh/v1beta1", kind="NodePool", metadata={"name": "g5s"},
    spec={"template": {"spec": {
        "nodeClassRef": {"name": "legacy"},
        "requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5"]}]}}})
k8s.apps.v1.Deployment(
    "trainer", metadata={"name": "trainer"},
    spec={"selector": {"match_labels": {"app": "trainer"}}, "template": {
        "metadata": {"labels": {"app": "trainer"}},
        "spec": {"containers": [{"name": "train", "image": "python:3.12",
                                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}})
