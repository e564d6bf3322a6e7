"""The Alibaba Cloud lookups public programs make, answered in the shapes of ``pulumi_alicloud``'s result types
(``Get<Name>Result`` and their item types; checked field by field in ``tests/review/test_lookups.py``): regions,
the caller, instance types (GPU types with their GPU count and model), VPCs, security groups, KMS keys and
aliases, ACK clusters. Ids carry the region code and length of real ones (``mocks_alicloud``)."""

from __future__ import annotations

import re
from typing import Any

from gpulease.core.catalog.cpu import load_cpu_catalog
from gpulease.review.mock_ids import ALICLOUD_ACCOUNT_ID, _hex
from gpulease.review.mock_registry import MockState, register_answers
from gpulease.review.mocks_alicloud import _ALI_REGION_CODES, _ali_resource_id, _ali_zone_ids

_REGION_LOCAL_NAMES = {"cn-hangzhou": "华东1（杭州）", "cn-shanghai": "华东2（上海）", "cn-beijing": "华北2（北京）",
                       "cn-shenzhen": "华南1（深圳）", "ap-southeast-1": "新加坡", "eu-central-1": "德国（法兰克福）"}

# A few instance types with their GPUs, as DescribeInstanceTypes reports them (GPUAmount, GPUSpec):
# https://www.alibabacloud.com/help/en/ecs/user-guide/gpu-accelerated-compute-optimized-and-vgpu-accelerated-instance-families-1
_TYPES = {
    "ecs.gn6i-c4g1.xlarge": (4, 15, 1, "NVIDIA T4", "ecs.gn6i"),
    "ecs.gn7i-c8g1.2xlarge": (8, 30, 1, "NVIDIA A10", "ecs.gn7i"),
    "ecs.gn7i-c16g1.4xlarge": (16, 60, 1, "NVIDIA A10", "ecs.gn7i"),
    "ecs.gn7e-c16g1.4xlarge": (16, 125, 1, "NVIDIA A100", "ecs.gn7e"),
    "ecs.g7.xlarge": (4, 16, 0, "", "ecs.g7"),
    "ecs.g7.2xlarge": (8, 32, 0, "", "ecs.g7"),
    # The smallest compute-optimized type, which CPU filters such as cpu_core_count=2, memory_size=4 find:
    # https://www.alibabacloud.com/help/en/ecs/user-guide/compute-optimized-instance-families (c7: 2 vCPUs, 4 GiB).
    "ecs.c7.large": (2, 4, 0, "", "ecs.c7"),
    # The CPU types of the kit's catalog (gpulease/core/catalog/cpu_instances.yaml), with their sizes.
    **{row.type: (row.vcpu, row.ram_gb, 0, "", row.type.rsplit(".", 1)[0])
       for row in load_cpu_catalog().instances if row.cloud == "alicloud"},
}


def _type_matches(name: str, spec: tuple, a: dict) -> bool:
    cpu, mem, gpus, model, family = spec
    checks = [
        (a.get("instanceType"), lambda v: v == name),
        (a.get("instanceTypeFamily"), lambda v: v == family),
        (a.get("cpuCoreCount"), lambda v: int(v) == cpu),
        (a.get("memorySize"), lambda v: float(v) == mem),
        (a.get("gpuAmount"), lambda v: int(v) == gpus),
        (a.get("gpuSpec"), lambda v: str(v).lower() in model.lower()),
    ]
    return all(value is None or test(value) for value, test in checks)


def regions(m: MockState, a: dict) -> dict:
    names = [a["name"]] if a.get("name") else ([m.region] if a.get("current") else sorted(_ALI_REGION_CODES))
    return {"id": _hex("regions", *names, length=10), "ids": names, "current": a.get("current"),
            "name": a.get("name"), "outputFile": a.get("outputFile"),
            "regions": [{"id": r, "regionId": r, "localName": _REGION_LOCAL_NAMES.get(r, r)} for r in names]}


def caller_identity(m: MockState, a: dict) -> dict:
    return {"id": ALICLOUD_ACCOUNT_ID, "accountId": ALICLOUD_ACCOUNT_ID, "identityType": "RAMUser",
            "arn": f"acs:ram::{ALICLOUD_ACCOUNT_ID}:user/ci"}


def instance_types(m: MockState, a: dict) -> dict:
    zones = _ali_zone_ids(m)
    if a.get("availabilityZone"):
        zones = [z for z in zones if z == a["availabilityZone"]]
    found = [(name, spec) for name, spec in _TYPES.items() if _type_matches(name, spec, a)]
    types = [
        {
            "id": name, "family": spec[4], "cpuCoreCount": spec[0], "memorySize": float(spec[1]),
            # Lists of one, as GetInstanceTypesInstanceTypeResult declares them (pulumi_alicloud/ecs/outputs.py).
            "gpus": [{"amount": str(spec[2]), "category": spec[3]}], "availabilityZones": zones,
            "burstableInstances": [{"baselineCredit": "", "initialCredit": ""}],
            "localStorages": [{"amount": "0", "capacity": "0", "category": ""}],
            "eniAmount": 4, "eniQuantity": 4, "eniPrivateIpAddressQuantity": 10, "eniIpv6AddressQuantity": 10,
            "maximumQueueNumberPerEni": 8, "primaryEniQueueNumber": 8, "secondaryEniQueueNumber": 4,
            "totalEniQueueQuantity": 32, "nvmeSupport": "unsupported", "price": "",
        }
        for name, spec in found
    ]
    echo = {k: a.get(k) for k in ("availabilityZone", "cpuCoreCount", "eniAmount", "gpuAmount", "gpuSpec", "imageId",
                                  "instanceChargeType", "instanceType", "instanceTypeFamily", "isOutdated",
                                  "kubernetesNodeRole", "memorySize", "minimumEniIpv6AddressQuantity",
                                  "minimumEniPrivateIpAddressQuantity", "networkType", "outputFile", "sortedBy",
                                  "spotStrategy", "systemDiskCategory")}
    return {**echo, "id": _hex("types", m.region, str(sorted(a.items())), length=10),
            "ids": [t["id"] for t in types], "instanceTypes": types}


def networks(m: MockState, a: dict) -> dict:
    vpc_id = (a.get("ids") or [None])[0] or _ali_resource_id(m, "vpc", "existing")
    name = a.get("vpcName") or "default-vpc"
    if a.get("nameRegex") and not re.search(a["nameRegex"], name):
        name = a["nameRegex"].strip("^$")
    vpcs = [{
        "id": vpc_id, "vpcId": vpc_id, "vpcName": name, "cidrBlock": a.get("cidrBlock") or "172.16.0.0/12",
        "creationTime": "2026-01-01T00:00:00Z", "description": "", "dhcpOptionsSetId": "",
        "dhcpOptionsSetStatus": "", "dnsHostnameStatus": "DISABLED", "ipv6CidrBlock": "",
        "isDefault": bool(a.get("isDefault", True)), "regionId": m.region, "resourceGroupId": "rg-acfm2example",
        "routeTableId": _ali_resource_id(m, "vtb", vpc_id), "routerId": _ali_resource_id(m, "vrt", vpc_id),
        "vrouterId": _ali_resource_id(m, "vrt", vpc_id), "secondaryCidrBlocks": [], "userCidrs": [],
        "status": "Available", "tags": a.get("tags") or {},
        "vswitchIds": [_ali_resource_id(m, "vsw", "existing", z) for z in _ali_zone_ids(m)],
    }]
    echo = {k: a.get(k) for k in ("cidrBlock", "dhcpOptionsSetId", "dryRun", "enableDetails", "isDefault", "nameRegex",
                                  "outputFile", "pageNumber", "pageSize", "resourceGroupId", "status", "tags",
                                  "vpcName", "vpcOwnerId", "vswitchId")}
    return {**echo, "id": _hex("vpcs", m.region, str(sorted(a.items())), length=10), "ids": [vpc_id],
            "names": [name], "totalCount": 1, "vpcs": vpcs}


def security_groups(m: MockState, a: dict) -> dict:
    vpc_id = a.get("vpcId") or _ali_resource_id(m, "vpc", "existing")
    sid = (a.get("ids") or [None])[0] or _ali_resource_id(m, "sg", "existing", vpc_id)
    group = {"id": sid, "name": "default", "securityGroupName": "default", "description": "System created security group.",
             "vpcId": vpc_id, "securityGroupType": "normal", "innerAccess": True, "resourceGroupId": "rg-acfm2example",
             "creationTime": "2026-01-01T00:00:00Z", "tags": {}}
    echo = {k: a.get(k) for k in ("enableDetails", "nameRegex", "outputFile", "pageNumber", "pageSize",
                                  "resourceGroupId", "tags", "vpcId")}
    return {**echo, "id": _hex("sgs", m.region, str(sorted(a.items())), length=10), "ids": [sid],
            "names": ["default"], "groups": [group], "totalCount": 1}


def kms_keys(m: MockState, a: dict) -> dict:
    key_id = (a.get("ids") or [None])[0] or _uuid("alikms", m.region)
    key = {"id": key_id, "keyId": key_id, "arn": f"acs:kms:{m.region}:{ALICLOUD_ACCOUNT_ID}:key/{key_id}",
           "automaticRotation": "Disabled", "creationDate": "2026-01-01T00:00:00Z", "creator": ALICLOUD_ACCOUNT_ID,
           "deleteDate": "", "description": "", "keySpec": "Aliyun_AES_256", "keyUsage": "ENCRYPT/DECRYPT",
           "lastRotationDate": "", "materialExpireTime": "", "nextRotationDate": "", "origin": "Aliyun_KMS",
           "primaryKeyVersion": _uuid("alikms-version", key_id), "protectionLevel": "SOFTWARE",
           "rotationInterval": "", "status": "Enabled"}
    echo = {k: a.get(k) for k in ("descriptionRegex", "enableDetails", "filters", "outputFile", "status")}
    return {**echo, "id": _hex("kmskeys", m.region, str(sorted(a.items())), length=10), "ids": [key_id], "keys": [key]}


def kms_aliases(m: MockState, a: dict) -> dict:
    names = a.get("names") or ["alias/acs/ecs"]
    aliases = [{"id": n, "aliasName": n, "keyId": _uuid("alikms", m.region, n)} for n in names]
    return {"id": _hex("kmsaliases", m.region, *names, length=10), "ids": [x["keyId"] for x in aliases],
            "names": names, "aliases": aliases, "nameRegex": a.get("nameRegex"), "outputFile": a.get("outputFile")}


def ack_clusters(m: MockState, a: dict) -> dict:
    return {"id": _hex("ack", m.region, length=10), "ids": [], "names": [], "clusters": [],
            "enableDetails": a.get("enableDetails"), "kubeConfigFilePrefix": a.get("kubeConfigFilePrefix"),
            "nameRegex": a.get("nameRegex"), "outputFile": a.get("outputFile")}


def _uuid(*parts: str) -> str:
    h = _hex(*parts, length=32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


CALLS: dict[str, Any] = {
    "alicloud:index/getRegions:getRegions": regions,
    "alicloud:index/getCallerIdentity:getCallerIdentity": caller_identity,
    "alicloud:ecs/getInstanceTypes:getInstanceTypes": instance_types,
    "alicloud:vpc/getNetworks:getNetworks": networks,
    "alicloud:ecs/getSecurityGroups:getSecurityGroups": security_groups,
    "alicloud:kms/getKeys:getKeys": kms_keys,
    "alicloud:kms/getAliases:getAliases": kms_aliases,
    "alicloud:cs/getManagedKubernetesClusters:getManagedKubernetesClusters": ack_clusters,
}

register_answers(CALLS)
