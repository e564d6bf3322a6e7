"""The Alibaba Cloud answers of the mocks: invokes (zones, images, account, disks, vSwitches) and resources."""

from __future__ import annotations

from typing import Any

from gpulease.core import resources as rt
from gpulease.review.mock_ids import ALICLOUD_ACCOUNT_ID, _hex, _ip
from gpulease.review.mock_registry import MockState, register_answers

# The region code that real Alibaba Cloud resource ids carry after the type prefix (i-bp1..., vpc-t4n...).
_ALI_REGION_CODES = {
    "cn-hangzhou": "bp1",
    "cn-shanghai": "uf6",
    "cn-beijing": "2ze",
    "cn-shenzhen": "wz9",
    "cn-zhangjiakou": "8vb",
    "cn-hongkong": "j6c",
    "ap-southeast-1": "t4n",
    "ap-northeast-1": "6we",
    "eu-central-1": "gw8",
    "us-west-1": "rj9",
}
# Zones of the regions used in examples and tests, as Alibaba Cloud names them.
_ALI_ZONES = {
    "cn-hangzhou": ["cn-hangzhou-h", "cn-hangzhou-i", "cn-hangzhou-j", "cn-hangzhou-k"],
    "cn-shanghai": ["cn-shanghai-e", "cn-shanghai-f", "cn-shanghai-g", "cn-shanghai-l"],
    "cn-beijing": ["cn-beijing-g", "cn-beijing-h", "cn-beijing-i", "cn-beijing-l"],
    "ap-southeast-1": ["ap-southeast-1a", "ap-southeast-1b", "ap-southeast-1c"],
}


def _ali_code(m: MockState) -> str:
    return _ALI_REGION_CODES.get(m.region, "gw8")


def _ali_zone_ids(m: MockState) -> list[str]:
    return _ALI_ZONES.get(m.region) or [f"{m.region}-{s}" for s in "abc"]


def _ali_resource_id(m: MockState, prefix: str, *parts: str) -> str:
    """``<prefix>-<region code><17 chars>``: the length and shape of real ids."""
    return f"{prefix}-{_ali_code(m)}{_hex(prefix, m.region, *parts, length=17)}"


def _ali_zones(m: MockState, a: dict) -> dict:
    zones = _ali_zone_ids(m)
    itype = a.get("availableInstanceType")
    # A100/H800-class types (gn7e, gn8, ebmgn) are stocked in fewer zones than A10 or T4, as in real regions.
    if itype and itype.startswith(("ecs.gn7e", "ecs.gn8", "ecs.ebmgn")):
        zones = zones[1:3]
    return {
        "ids": zones,
        "zones": [
            {
                "id": z,
                "localName": z,
                "availableInstanceTypes": [itype] if itype else [],
                "availableDiskCategories": ["cloud_essd", "cloud_auto", "cloud_efficiency", "cloud_ssd"],
                "availableResourceCreations": ["Instance", "Disk", "VSwitch"],
                "multiZoneIds": [],
                "slbSlaveZoneIds": [],
            }
            for z in zones
        ],
        "id": _hex("zones", m.region, str(sorted(a.items())), length=10),
    }


def _ali_images(m: MockState, a: dict) -> dict:
    image = "ubuntu_22_04_x64_20G_alibase_20261101.vhd"
    return {
        "ids": [image],
        "images": [
            {
                "id": image,
                "imageId": image,
                "name": image,
                "osType": "linux",
                "osName": "Ubuntu  22.04 64位",
                "osNameEn": "Ubuntu  22.04 64 bit",
                "platform": "Ubuntu",
                "architecture": "x86_64",
                "imageOwnerAlias": a.get("owners") or "system",
                "imageVersion": "20261101",
                "creationTime": "2026-11-01T08:00:00Z",
                "description": "",
                "diskDeviceMappings": [],
                "isCopied": False,
                "isSelfShared": "",
                "isSubscribed": False,
                "isSupportIoOptimized": True,
                "productCode": "",
                "progress": "100%",
                "size": 20,
                "state": "Available",
                "status": "Available",
                "usage": "instance",
            }
        ],
        "id": _hex("images", m.region, str(sorted(a.items())), length=10),
    }


def _ali_account(m: MockState, a: dict) -> dict:
    return {"id": ALICLOUD_ACCOUNT_ID}


def _ali_disks(m: MockState, a: dict) -> dict:
    """Existing disks: any ``d-`` id is found, in the zone ``existing_volumes`` names (else the first zone)."""
    ids = [d for d in a.get("ids") or [] if d.startswith("d-")]
    disks = [
        {
            "id": d,
            "diskId": d,
            "zoneId": m.existing_volumes.get(d, _ali_zone_ids(m)[0]),
            "availabilityZone": m.existing_volumes.get(d, _ali_zone_ids(m)[0]),
            "size": 500,
            "category": "cloud_essd",
            "encrypted": "on",
            "status": "Available",
            "paymentType": "PayAsYouGo",
            "type": "data",
        }
        for d in ids
    ]
    return {"ids": ids, "disks": disks, "totalCount": len(disks), "id": _hex("disks", *ids, length=10)}


def _ali_switches(m: MockState, a: dict) -> dict:
    """vSwitches: looked up by id (zone recovered from the id) or by VPC and zone (one per zone)."""
    ids = a.get("ids") or []
    zones = _ali_zone_ids(m)
    if ids:
        found = [(sid, next((z for z in zones if _ali_resource_id(m, "vsw", "existing", z) == sid), zones[0])) for sid in ids]
    else:
        wanted = [a["zoneId"]] if a.get("zoneId") else zones
        found = [(_ali_resource_id(m, "vsw", "existing", z), z) for z in wanted if z in zones]
    vpc_id = a.get("vpcId") or _ali_resource_id(m, "vpc", "existing")
    switches = [
        {
            "id": sid,
            "vswitchId": sid,
            "vswitchName": f"vsw-{zone}",
            "name": f"vsw-{zone}",
            "vpcId": vpc_id,
            "zoneId": zone,
            "cidrBlock": f"172.16.{zones.index(zone) * 16}.0/20",
            "availableIpAddressCount": 4090,
            "creationTime": "2026-01-01T00:00:00Z",
            "description": "",
            "enableIpv6": False,
            "ipv6CidrBlock": "",
            "isDefault": False,
            "resourceGroupId": "rg-acfm2example",
            "routeTableId": _ali_resource_id(m, "vtb", vpc_id),
            "status": "Available",
            "tags": {},
        }
        for sid, zone in found
    ]
    return {"ids": [s["id"] for s in switches], "vswitches": switches, "totalCount": len(switches), "id": _hex("vsw", str(sorted(a.items())), length=10)}


def _ali_id(prefix: str):
    def make(m: MockState, name: str, i: dict) -> tuple[str, dict]:
        return _ali_resource_id(m, prefix, name), {}

    return make


def _ali_instance(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    iid = _ali_resource_id(m, "i", name)
    public = _ip("ali-ip", name, block="203.0.113") if (i.get("internetMaxBandwidthOut") or 0) > 0 else ""
    return iid, {
        "publicIp": public,
        "privateIp": _ip("ali-pip", name, block="10.42.0"),
        "primaryIpAddress": _ip("ali-pip", name, block="10.42.0"),
        "status": "Running",
        "instanceName": i.get("instanceName") or name,
        "systemDiskId": _ali_resource_id(m, "d", name, "system"),
        "cpu": 8,
        "memory": 30720,
        "osType": "linux",
        "osName": "Ubuntu  22.04 64 bit",
    }


def _ali_disk(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    return _ali_resource_id(m, "d", name), {"status": "Available", "paymentType": i.get("paymentType") or "PayAsYouGo", "regionId": m.region if m.region_given else ""}


def _ali_disk_attachment(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    # The provider's id is "<disk id>:<instance id>".
    return f"{i.get('diskId') or 'd-unknown'}:{i.get('instanceId') or 'i-unknown'}", {}


def _ali_sg_rule(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    # The provider's id: <sg id>:<type>:<protocol>:<ports>:<nic type>:<cidr>:<policy>:<priority>.
    source = i.get("cidrIp") or i.get("ipv6CidrIp") or i.get("sourceSecurityGroupId") or ""
    parts = [i.get("securityGroupId") or "sg-unknown", i.get("type", ""), i.get("ipProtocol", ""), i.get("portRange") or "-1/-1",
             i.get("nicType") or "intranet", source, i.get("policy") or "accept", str(i.get("priority") or 1)]
    return ":".join(parts), {"securityGroupRuleId": f"sgr-{_ali_code(m)}{_hex('sgr', name, length=17)}"}


def _ali_bucket(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    bucket = i.get("bucket") or f"{name}-{_hex('bucket', name, length=7)}"
    return bucket, {
        "bucket": bucket,
        "creationDate": "2026-11-01",
        "extranetEndpoint": f"oss-{m.region}.aliyuncs.com",
        "intranetEndpoint": f"oss-{m.region}-internal.aliyuncs.com",
        "location": f"oss-{m.region}",
        "owner": ALICLOUD_ACCOUNT_ID,
    }


def _ali_role(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    role = i.get("roleName") or i.get("name") or name
    return role, {
        "roleName": role,
        "arn": f"acs:ram::{ALICLOUD_ACCOUNT_ID}:role/{role.lower()}",
        "roleId": "3" + str(int(_hex("ram", name, length=14), 16)).zfill(18)[-18:],
        "createTime": "2026-11-01T08:00:00Z",
    }


def _ali_policy(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    policy = i.get("policyName") or i.get("name") or name
    return policy, {"policyName": policy, "policyType": "Custom", "defaultVersion": "v1", "attachmentCount": 0}


def _ali_role_policy_attachment(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    # The provider's id: "role:<policy name>:<policy type>:<role name>".
    return f"role:{i.get('policyName')}:{i.get('policyType')}:{i.get('roleName')}", {}


def _ali_ram_role_attachment(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    return f"{i.get('ramRoleName')}:{i.get('instanceId')}", {}


def _ali_key(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    key = i.get("keyPairName") or i.get("keyName") or name
    return key, {"keyPairName": key, "fingerPrint": ":".join(_hex("fp", name, length=32)[k : k + 2] for k in range(0, 32, 2))}


def _ali_bucket_setting(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    # Per-bucket settings are identified by the bucket name.
    return str(i.get("bucket") or name), {}


def _ali_bucket_object(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    # An object is identified by its key; versioned buckets give every upload a version id.
    return str(i.get("key") or name), {"versionId": _hex("ver", name, length=32)}


CALLS: dict[str, Any] = {
    "alicloud:index/getZones:getZones": _ali_zones,
    "alicloud:ecs/getImages:getImages": _ali_images,
    "alicloud:index/getAccount:getAccount": _ali_account,
    "alicloud:ecs/getEcsDisks:getEcsDisks": _ali_disks,
    "alicloud:vpc/getSwitches:getSwitches": _ali_switches,
}

RESOURCES: dict[str, Any] = {
    rt.ALI_INSTANCE: _ali_instance,
    rt.ALI_ECS_DISK: _ali_disk,
    "alicloud:ecs/ecsDiskAttachment:EcsDiskAttachment": _ali_disk_attachment,
    "alicloud:ecs/securityGroup:SecurityGroup": _ali_id("sg"),
    rt.ALI_SECURITY_GROUP_RULE: _ali_sg_rule,
    "alicloud:ecs/ecsKeyPair:EcsKeyPair": _ali_key,
    "alicloud:ecs/keyPair:KeyPair": _ali_key,
    "alicloud:ecs/ramRoleAttachment:RamRoleAttachment": _ali_ram_role_attachment,
    "alicloud:vpc/network:Network": _ali_id("vpc"),
    "alicloud:vpc/switch:Switch": _ali_id("vsw"),
    rt.ALI_BUCKET: _ali_bucket,
    rt.ALI_BUCKET_ACL: _ali_bucket_setting,
    rt.ALI_BUCKET_PUBLIC_ACCESS_BLOCK: _ali_bucket_setting,
    "alicloud:oss/bucketPolicy:BucketPolicy": _ali_bucket_setting,
    "alicloud:oss/bucketObject:BucketObject": _ali_bucket_object,
    "alicloud:ram/role:Role": _ali_role,
    "alicloud:ram/policy:Policy": _ali_policy,
    "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment": _ali_role_policy_attachment,
}

register_answers(CALLS, RESOURCES)
