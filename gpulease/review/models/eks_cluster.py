"""``eks.Cluster`` (pulumi/pulumi-eks, nodejs/eks/cluster/cluster.ts ``createCore`` and ``createCluster``): the EKS
cluster with its service role and security group, the worker instance role and profile, and — unless
``skipDefaultNodeGroup``, ``fargate`` or ``autoMode.enabled`` — the default node group, a launch template and an
autoscaling group named after the cluster (``createNodeGroupV2`` with ``nodeGroupOptions``, or the cluster's own
``instanceType``, ``desiredCapacity``, ``minSize``, ``maxSize``, ``nodeRootVolume*``, ``gpu``, ``spotPrice``).

Outputs as the SDK declares them (pulumi_eks/cluster.py): ``kubeconfig`` an object, ``kubeconfigJson`` its JSON,
``eksCluster``, ``instanceRoles``, the security groups as resources, ``defaultNodeGroupAsgName`` a string, ``core``
the cluster's data (``CoreData``). With ``createOidcProvider``, the IAM OIDC provider ``createCore`` makes for the
cluster's issuer (``aws.iam.OpenIdConnectProvider`` ``<name>-oidcProvider``, ``core.oidcProvider``): the issuer
is an output of the EKS cluster, unknown at preview, so the provider's ``url`` and ``arn`` and the component's
``oidcProviderUrl`` and ``oidcProviderArn`` are unknown offline. The addons and the aws-auth config map are not
modelled.
"""

from __future__ import annotations

import json
from typing import Any

from pulumi.runtime import rpc

from gpulease.review.mock_ids import _hex
from gpulease.review.mock_registry import ComponentBuild, ComponentModel, register_model
from gpulease.review.mocks_aws import _subnet_id
from gpulease.review.models import eks_nodes

_NODE_OPTIONS = ("nodeSubnetIds", "nodeAssociatePublicIpAddress", "instanceType", "nodePublicKey",
                 "nodeRootVolumeEncrypted", "nodeRootVolumeSize", "nodeUserData", "minSize", "maxSize",
                 "desiredCapacity", "gpu", "version", "spotPrice")
_ASSUME_EC2 = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]})
_ASSUME_EKS = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}, "Action": "sts:AssumeRole"}]})


def _kubeconfig(name: Any, endpoint: str, ca: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Config", "current-context": "aws",
            "clusters": [{"name": "kubernetes", "cluster": {"server": endpoint, "certificate-authority-data": ca}}],
            "contexts": [{"name": "aws", "context": {"cluster": "kubernetes", "user": "aws"}}],
            "users": [{"name": "aws", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                                        "command": "aws",
                                                        "args": ["eks", "get-token", "--cluster-name", name]}}}]}


def build(b: ComponentBuild) -> dict[str, Any]:
    name, i = b.name, b.inputs
    vpc_id = i.get("vpcId") or f"vpc-{_hex('vpc', b.region)}"
    # Without a VPC, the default VPC's subnets (the same lookups answer: mocks_aws).
    subnets = (i.get("subnetIds") or [*(i.get("publicSubnetIds") or []), *(i.get("privateSubnetIds") or [])]
               or ([] if i.get("vpcId") else [_subnet_id(f"{b.region}{z}") for z in "abc"]))
    service_role = b.child("aws:iam/role:Role", f"{name}-eksRole-role", {"assumeRolePolicy": _ASSUME_EKS})
    cluster_sg = b.child("aws:ec2/securityGroup:SecurityGroup", f"{name}-eksClusterSecurityGroup", {
        "vpcId": vpc_id, "revokeRulesOnDelete": True, "tags": {"Name": f"{name}-eksClusterSecurityGroup"}})
    cluster_name = i.get("name") or f"{name}-eksCluster-{_hex('eks', name, length=7)}"
    eks = b.child("aws:eks/cluster:Cluster", f"{name}-eksCluster", {
        "name": cluster_name, "roleArn": service_role.outputs.get("arn"), "version": i.get("version"),
        "vpcConfig": {"securityGroupIds": [cluster_sg.id], "subnetIds": subnets,
                      "endpointPrivateAccess": i.get("endpointPrivateAccess"),
                      "endpointPublicAccess": i.get("endpointPublicAccess")},
        "tags": {"Name": f"{name}-eksCluster", **(i.get("tags") or {})}}, depends={"roleArn": [service_role]})
    roles = list(i.get("instanceRoles") or [])
    made = []
    if not roles and i.get("instanceRole") is None:
        role = b.child("aws:iam/role:Role", f"{name}-instanceRole-role", {"assumeRolePolicy": _ASSUME_EC2})
        made, roles = [role.ref()], [role.id]
    profile = b.child("aws:iam/instanceProfile:InstanceProfile", f"{name}-instanceProfile",
                      {"role": i.get("instanceRole") or roles[0]})
    node_sg = eks_nodes.node_security_group(b, name, vpc_id, cluster_name)
    auto = i.get("autoMode") or {}
    asg_name = ""
    if not (i.get("skipDefaultNodeGroup") or i.get("fargate") or auto.get("enabled")):
        opts = i.get("nodeGroupOptions") or {k: i.get(k) for k in _NODE_OPTIONS}
        opts = {**opts, "amiId": opts.get("amiId") or i.get("nodeAmiId")}
        _, group = eks_nodes.self_managed_v2(
            b, name, opts, cluster_name=cluster_name, profile=profile.id, security_group=node_sg.id,
            subnet_ids=opts.get("nodeSubnetIds") or i.get("privateSubnetIds") or i.get("publicSubnetIds") or subnets)
        asg_name = group.id
    endpoint = f"https://{_hex('endpoint', name, length=32).upper()}.gr7.{b.region}.eks.amazonaws.com"
    ca = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="
    kubeconfig = _kubeconfig(cluster_name, endpoint, ca)
    oidc, oidc_url, oidc_arn = None, "", ""
    if i.get("createOidcProvider"):
        oidc = b.child("aws:iam/openIdConnectProvider:OpenIdConnectProvider", f"{name}-oidcProvider", {
            "clientIdLists": ["sts.amazonaws.com"], "url": rpc.UNKNOWN, "thumbprintLists": [rpc.UNKNOWN]},
            depends={"url": [eks], "thumbprintLists": [eks]}).ref()
        oidc_url = oidc_arn = rpc.UNKNOWN
    core = {"cluster": eks.ref(), "clusterIamRole": service_role.ref(), "endpoint": endpoint, "vpcId": vpc_id,
            "subnetIds": subnets, "publicSubnetIds": i.get("publicSubnetIds"), "privateSubnetIds": i.get("privateSubnetIds"),
            "instanceRoles": made, "nodeGroupOptions": {}, "kubeconfig": kubeconfig, "tags": i.get("tags") or {},
            "clusterSecurityGroup": cluster_sg.ref(), "awsProvider": None, "provider": None,
            "oidcProvider": oidc}
    return {
        "kubeconfig": kubeconfig, "kubeconfigJson": json.dumps(kubeconfig), "eksCluster": eks.ref(), "core": core,
        "clusterSecurityGroup": cluster_sg.ref(), "clusterSecurityGroupId": cluster_sg.id,
        "nodeSecurityGroup": node_sg.ref(), "nodeSecurityGroupId": node_sg.id, "instanceRoles": made,
        "defaultNodeGroupAsgName": asg_name, "clusterIngressRuleId": "", "fargateProfileId": "",
        "fargateProfileStatus": "", "oidcIssuer": "", "oidcProviderArn": oidc_arn, "oidcProviderUrl": oidc_url,
        "autoModeNodeRoleName": "",
    }


register_model(ComponentModel("eks:index:Cluster", build, "pulumi/pulumi-eks nodejs/eks/cluster/cluster.ts"))
