"""The AWS lookups public programs make, answered as the provider would (the shapes of ``pulumi_aws``'s result
types, ``Get<Name>Result`` in each module's ``get_<name>.py``; every field of each answer is checked against them
in ``tests/review/test_lookups.py``): zones, region, VPC parts, AMIs by any filter and through SSM aliases,
Route 53 zones, EKS clusters, KMS keys and aliases, IAM roles and managed policies.

The values follow the documented formats (ids, ARNs, dates), derived from a hash of the request so that two
renders of one stack agree and two different lookups never share an answer.
"""

from __future__ import annotations

import base64
from typing import Any

from gpulease.review.mock_ids import ACCOUNT_ID, _hex, _zones
from gpulease.review.mock_registry import MockState, register_answers

# Zone ids are per account in AWS (use1-az1...); the mapping to names is stable within one account.
_ZONE_ID_PREFIX = {"us-east-1": "use1", "us-east-2": "use2", "us-west-2": "usw2", "eu-west-1": "euw1",
                   "eu-central-1": "euc1", "ap-northeast-1": "apne1", "ap-southeast-1": "apse1"}
_REGION_NAMES = {"us-east-1": "US East (N. Virginia)", "us-east-2": "US East (Ohio)", "us-west-2": "US West (Oregon)",
                 "eu-west-1": "Europe (Ireland)", "eu-central-1": "Europe (Frankfurt)",
                 "ap-northeast-1": "Asia Pacific (Tokyo)", "ap-southeast-1": "Asia Pacific (Singapore)"}


def _filter_values(a: dict, name: str) -> list[str]:
    return [v for f in a.get("filters") or [] if f.get("name") == name for v in f.get("values") or []]


def _zone_id(m: MockState, zone: str) -> str:
    prefix = _ZONE_ID_PREFIX.get(m.region, m.region.replace("-", "")[:5])
    return f"{prefix}-az{_zones(m).index(zone) + 1}" if zone in _zones(m) else f"{prefix}-az1"


def availability_zones(m: MockState, a: dict) -> dict:
    names = [z for z in _zones(m) if z not in (a.get("excludeNames") or [])]
    names = [z for z in names if _zone_id(m, z) not in (a.get("excludeZoneIds") or [])]
    return {
        "id": m.region,
        "names": names,
        "zoneIds": [_zone_id(m, z) for z in names],
        "groupNames": [m.region] * len(names),
        "state": a.get("state"),
        "allAvailabilityZones": a.get("allAvailabilityZones"),
        "excludeNames": a.get("excludeNames"),
        "excludeZoneIds": a.get("excludeZoneIds"),
        "filters": a.get("filters"),
        "region": m.region,
    }


def region(m: MockState, a: dict) -> dict:
    name = a.get("region") or a.get("name") or m.region
    return {"id": name, "name": name, "region": name, "description": _REGION_NAMES.get(name, name),
            "endpoint": f"ec2.{name}.amazonaws.com"}


def security_group(m: MockState, a: dict) -> dict:
    name = a.get("name") or next(iter(_filter_values(a, "group-name")), "default")
    sid = a.get("id") or f"sg-{_hex('existing-sg', m.region, name)}"
    return {"id": sid, "arn": m.arn("ec2", f"security-group/{sid}"), "name": name,
            "description": "default VPC security group" if name == "default" else f"{name} security group",
            "vpcId": a.get("vpcId") or f"vpc-{_hex('vpc', m.region)}", "tags": a.get("tags") or {},
            "filters": a.get("filters"), "region": m.region}


def vpcs(m: MockState, a: dict) -> dict:
    return {"id": m.region, "ids": [f"vpc-{_hex('vpc', m.region)}"], "filters": a.get("filters"),
            "tags": a.get("tags") or {}, "region": m.region}


def ami_ids(m: MockState, a: dict) -> dict:
    names = _filter_values(a, "name") or [a.get("nameRegex") or "image"]
    return {"id": m.region, "ids": [f"ami-{_hex('ami', m.region, n)}" for n in names], "owners": a.get("owners"),
            "filters": a.get("filters"), "nameRegex": a.get("nameRegex"), "executableUsers": a.get("executableUsers"),
            "includeDeprecated": a.get("includeDeprecated"), "sortAscending": a.get("sortAscending"),
            "region": m.region}


# Public SSM parameters that name the latest image of a family (the documented "AMI aliases"):
# https://docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-public-parameters-ami.html
_AMI_PARAMETER_PREFIXES = ("/aws/service/", "resolve:ssm:")


def ssm_parameter(m: MockState, a: dict) -> dict:
    name = str(a.get("name") or "")
    if name.startswith(_AMI_PARAMETER_PREFIXES) and ("ami" in name or "image" in name):
        value = f"ami-{_hex('ami', m.region, name)}"
        kind = "String"
    else:
        # A parameter of the program's own: its value is not known offline; a placeholder of the same type.
        value = f"offline-value-of-{name.strip('/').replace('/', '-') or 'parameter'}"
        kind = "SecureString" if a.get("withDecryption") else "String"
    return {"id": name, "name": name, "arn": m.arn("ssm", f"parameter/{name.lstrip('/')}"), "type": kind,
            "value": value, "insecureValue": value if kind == "String" else None, "version": 1,
            "withDecryption": a.get("withDecryption"), "region": m.region}


def route53_zone(m: MockState, a: dict) -> dict:
    name = str(a.get("name") or "example.com").rstrip(".") + "."
    zone_id = a.get("zoneId") or "Z" + _hex("zone", name, length=20).upper()
    servers = [f"ns-{int(_hex('ns', name, str(i), length=3), 16) % 2048}.awsdns-{i:02d}.{tld}"
               for i, tld in enumerate(("com", "net", "org", "co.uk"))]
    return {"id": zone_id, "zoneId": zone_id, "name": name, "arn": f"arn:aws:route53:::hostedzone/{zone_id}",
            "callerReference": _hex("ref", name, length=36), "comment": "", "nameServers": servers,
            "primaryNameServer": servers[0], "privateZone": bool(a.get("privateZone")),
            "resourceRecordSetCount": 2, "tags": a.get("tags") or {}, "vpcId": a.get("vpcId"),
            "linkedServiceDescription": "", "linkedServicePrincipal": "", "enableAcceleratedRecovery": False}


def eks_cluster(m: MockState, a: dict) -> dict:
    name = str(a.get("name") or "cluster")
    endpoint_id = _hex("eks", m.region, name, length=32).upper()
    vpc_id = f"vpc-{_hex('vpc', m.region)}"
    ca = base64.b64encode(f"offline certificate authority of {name}".encode()).decode()
    return {
        "id": name, "name": name, "clusterId": None, "arn": m.arn("eks", f"cluster/{name}"),
        "endpoint": f"https://{endpoint_id}.gr7.{m.region}.eks.amazonaws.com",
        "certificateAuthorities": [{"data": ca}], "createdAt": "2026-01-15T10:00:00Z", "status": "ACTIVE",
        "version": "1.31", "platformVersion": "eks.12", "roleArn": f"arn:aws:iam::{ACCOUNT_ID}:role/{name}-cluster",
        "enabledClusterLogTypes": [], "tags": {}, "region": m.region, "deletionProtection": False,
        "identities": [{"oidcs": [{"issuer": f"https://oidc.eks.{m.region}.amazonaws.com/id/{endpoint_id}"}]}],
        "vpcConfig": {"clusterSecurityGroupId": f"sg-{_hex('eks-sg', name)}", "endpointPrivateAccess": True,
                      "endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"],
                      "securityGroupIds": [], "subnetIds": [f"subnet-{_hex('subnet', z)}" for z in _zones(m)],
                      "vpcId": vpc_id, "controlPlaneEgressMode": ""},
        "accessConfigs": [{"authenticationMode": "API_AND_CONFIG_MAP", "bootstrapClusterCreatorAdminPermissions": True}],
        "kubernetesNetworkConfigs": [{"elasticLoadBalancings": [{"enabled": False}], "ipFamily": "ipv4",
                                      "serviceIpv4Cidr": "10.100.0.0/16", "serviceIpv6Cidr": ""}],
        "upgradePolicies": [{"supportType": "STANDARD"}], "zonalShiftConfigs": [{"enabled": False}],
        "computeConfigs": [], "controlPlaneScalingConfigs": [], "outpostConfigs": [], "remoteNetworkConfigs": [],
        "storageConfigs": [], "kubeApiServerConfigs": [], "kubeControllerManagerConfigs": [],
        "kubeSchedulerConfigs": [],
    }


def eks_cluster_auth(m: MockState, a: dict) -> dict:
    name = str(a.get("name") or "cluster")
    return {"id": name, "name": name, "token": "k8s-aws-v1.offline-token-" + _hex("token", name), "region": m.region}


def eks_addon_version(m: MockState, a: dict) -> dict:
    addon = str(a.get("addonName") or "vpc-cni")
    return {"id": addon, "addonName": addon, "kubernetesVersion": a.get("kubernetesVersion") or "1.31",
            "version": "v1.19.0-eksbuild.1", "mostRecent": a.get("mostRecent"), "region": m.region}


def eks_clusters(m: MockState, a: dict) -> dict:
    return {"id": m.region, "names": [], "region": m.region}


def kms_key(m: MockState, a: dict) -> dict:
    ref = str(a.get("keyId") or "")
    key_id = ref if len(ref) == 36 and ref.count("-") == 4 else _uuid("kms", m.region, ref)
    return {
        "id": key_id, "keyId": key_id, "arn": m.arn("kms", f"key/{key_id}"), "awsAccountId": ACCOUNT_ID,
        "creationDate": "2026-01-15T10:00:00Z", "customerMasterKeySpec": "SYMMETRIC_DEFAULT",
        "keySpec": "SYMMETRIC_DEFAULT", "keyUsage": "ENCRYPT_DECRYPT", "keyState": "Enabled", "enabled": True,
        "keyManager": "AWS" if ref.startswith("alias/aws/") else "CUSTOMER", "origin": "AWS_KMS",
        "description": "Default key that protects my EBS volumes when no other key is defined"
        if ref == "alias/aws/ebs" else "", "multiRegion": False, "multiRegionConfigurations": [],
        "xksKeyConfigurations": [], "cloudHsmClusterId": "", "customKeyStoreId": "", "deletionDate": "",
        "expirationModel": "", "pendingDeletionWindowInDays": 0, "validTo": "", "grantTokens": a.get("grantTokens"),
        "region": m.region,
    }


def kms_alias(m: MockState, a: dict) -> dict:
    name = str(a.get("name") or "alias/aws/ebs")
    key_id = _uuid("kms", m.region, name)
    return {"id": m.arn("kms", name), "name": name, "arn": m.arn("kms", name), "targetKeyId": key_id,
            "targetKeyArn": m.arn("kms", f"key/{key_id}"), "region": m.region}


def iam_role(m: MockState, a: dict) -> dict:
    name = str(a.get("name") or "role")
    return {"id": name, "name": name, "arn": f"arn:aws:iam::{ACCOUNT_ID}:role/{name}", "path": "/",
            "uniqueId": "AROA" + _hex("role", name).upper(), "createDate": "2026-01-15T10:00:00Z",
            "description": "", "maxSessionDuration": 3600, "permissionsBoundary": "", "tags": {},
            "assumeRolePolicy": '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":'
                                '{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}',
            "roleLastUseds": [{"lastUsedDate": "", "region": ""}]}


def iam_policy(m: MockState, a: dict) -> dict:
    arn = str(a.get("arn") or "")
    name = a.get("name") or (arn.rsplit("/", 1)[-1] if arn else "policy")
    if not arn:
        arn = f"arn:aws:iam::{ACCOUNT_ID}:policy/{name}"
    return {"id": arn, "arn": arn, "name": name, "path": "/", "pathPrefix": a.get("pathPrefix"),
            "policyId": "ANPA" + _hex("policy", arn).upper(), "description": "", "attachmentCount": 1,
            "policy": '{"Version":"2012-10-17","Statement":[]}', "tags": {}}


def _uuid(*parts: str) -> str:
    h = _hex(*parts, length=32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


CALLS: dict[str, Any] = {
    "aws:index/getAvailabilityZones:getAvailabilityZones": availability_zones,
    "aws:index/getRegion:getRegion": region,
    "aws:ec2/getSecurityGroup:getSecurityGroup": security_group,
    "aws:ec2/getVpcs:getVpcs": vpcs,
    "aws:ec2/getAmiIds:getAmiIds": ami_ids,
    "aws:ssm/getParameter:getParameter": ssm_parameter,
    "aws:route53/getZone:getZone": route53_zone,
    "aws:eks/getCluster:getCluster": eks_cluster,
    "aws:eks/getClusterAuth:getClusterAuth": eks_cluster_auth,
    "aws:eks/getAddonVersion:getAddonVersion": eks_addon_version,
    "aws:eks/getClusters:getClusters": eks_clusters,
    "aws:kms/getKey:getKey": kms_key,
    "aws:kms/getAlias:getAlias": kms_alias,
    "aws:iam/getRole:getRole": iam_role,
    "aws:iam/getPolicy:getPolicy": iam_policy,
}

register_answers(CALLS)
