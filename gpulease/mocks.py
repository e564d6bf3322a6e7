"""Pulumi mocks that answer like the clouds do: realistic ids, ARNs, zones and image lookups.

Ids are derived from a hash of the resource's type and name, so two renders of the same stack give the same
ids (stable reports and diffs) while different resources never share one.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import pulumi

ACCOUNT_ID = "123456789012"
ALICLOUD_ACCOUNT_ID = "1234567890123456"


def _hex(*parts: str, length: int = 17) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:length]


def _ip(*parts: str, block: str = "198.51.100") -> str:
    return f"{block}.{int(_hex(*parts, length=4), 16) % 250 + 2}"


class CloudMocks(pulumi.runtime.Mocks):
    """Answers for both clouds. ``region`` drives zones and ARNs; ``existing`` maps disk ids to zones."""

    def __init__(self, region: str = "us-east-1", existing_volumes: dict[str, str] | None = None, now: datetime | None = None):
        self.region = region
        self.existing_volumes = existing_volumes or {}
        self.now = now
        self.calls: list[tuple[str, dict]] = []

    # --- invokes -----------------------------------------------------------------------------------
    def call(self, args: pulumi.runtime.MockCallArgs) -> dict:
        self.calls.append((args.token, dict(args.args)))
        handler = _CALLS.get(args.token)
        return handler(self, args.args) if handler else {}

    # --- resources ---------------------------------------------------------------------------------
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict]:
        handler = _RESOURCES.get(args.typ)
        inputs = dict(args.inputs)
        if handler is None:
            return f"{args.name}-id", inputs
        rid, extra = handler(self, args.name, inputs)
        return rid, {**inputs, **extra}

    def arn(self, service: str, resource: str, region: bool = True) -> str:
        return f"arn:aws:{service}:{self.region if region else ''}:{ACCOUNT_ID}:{resource}"


def _zones(m: CloudMocks) -> list[str]:
    if m.region.startswith("cn-") or (m.region.startswith("ap-southeast-") and "-" in m.region[13:]):
        return [f"{m.region}-{s}" for s in "hij"]
    return [f"{m.region}{s}" for s in "abc"]


# AWS invokes -----------------------------------------------------------------------------------------


def _caller_identity(m: CloudMocks, a: dict) -> dict:
    return {"accountId": ACCOUNT_ID, "arn": f"arn:aws:iam::{ACCOUNT_ID}:user/ci", "userId": "AIDAEXAMPLE", "id": ACCOUNT_ID}


def _partition(m: CloudMocks, a: dict) -> dict:
    return {"partition": "aws", "dnsSuffix": "amazonaws.com", "id": "aws", "reverseDnsPrefix": "com.amazonaws"}


def _get_vpc(m: CloudMocks, a: dict) -> dict:
    vid = a.get("id") or f"vpc-{_hex('vpc', m.region)}"
    return {"id": vid, "cidrBlock": "172.31.0.0/16", "default": bool(a.get("default")), "arn": m.arn("ec2", f"vpc/{vid}")}


def _subnet_id(zone: str) -> str:
    return f"subnet-{_hex('subnet', zone)}"


def _get_subnets(m: CloudMocks, a: dict) -> dict:
    zones = _zones(m)
    for f in a.get("filters") or []:
        if f.get("name") == "availability-zone":
            zones = [z for z in zones if z in f.get("values", [])]
    return {"ids": [_subnet_id(z) for z in zones], "id": m.region}


def _get_subnet(m: CloudMocks, a: dict) -> dict:
    sid = a.get("id")
    zone = next((z for z in _zones(m) if _subnet_id(z) == sid), _zones(m)[0])
    return {
        "id": sid,
        "vpcId": f"vpc-{_hex('vpc', m.region)}",
        "availabilityZone": zone,
        "cidrBlock": "172.31.0.0/20",
        "arn": m.arn("ec2", f"subnet/{sid}"),
    }


def _offerings(m: CloudMocks, a: dict) -> dict:
    types = [v for f in a.get("filters") or [] if f.get("name") == "instance-type" for v in f.get("values", [])]
    # Large GPU types are offered in fewer zones, as in real regions.
    zones = _zones(m)[1:] if any(t.startswith(("p4", "p5")) for t in types) else _zones(m)
    return {
        "locations": zones,
        "instanceTypes": [t for t in types for _ in zones],
        "locationTypes": ["availability-zone"] * len(zones),
        "id": m.region,
    }


def _get_ami(m: CloudMocks, a: dict) -> dict:
    name = next((f["values"][0] for f in a.get("filters") or [] if f.get("name") == "name"), "image")
    ami = f"ami-{_hex('ami', m.region, name)}"
    return {
        "id": ami,
        "imageId": ami,
        "name": name.replace("*", "20261101"),
        "architecture": "x86_64",
        "creationDate": "2026-11-01T00:00:00.000Z",
        "ownerId": "898082745236",
        "rootDeviceName": "/dev/sda1",
    }


def _get_volume(m: CloudMocks, a: dict) -> dict:
    vid = next((f["values"][0] for f in a.get("filters") or [] if f.get("name") == "volume-id"), "vol-0")
    zone = m.existing_volumes.get(vid, _zones(m)[0])
    return {"id": vid, "volumeId": vid, "availabilityZone": zone, "size": 500, "encrypted": True, "volumeType": "gp3"}


# Alibaba Cloud invokes -------------------------------------------------------------------------------


def _ali_zones(m: CloudMocks, a: dict) -> dict:
    zones = _zones(m)
    return {"ids": zones, "zones": [{"id": z, "localName": z} for z in zones], "id": m.region}


def _ali_images(m: CloudMocks, a: dict) -> dict:
    image = "ubuntu_22_04_x64_20G_alibase_20261101.vhd"
    return {"ids": [image], "images": [{"id": image, "imageId": image, "name": image, "osType": "linux"}], "id": m.region}


def _ali_account(m: CloudMocks, a: dict) -> dict:
    return {"id": ALICLOUD_ACCOUNT_ID}


def _ali_disks(m: CloudMocks, a: dict) -> dict:
    ids = a.get("ids") or []
    disks = [{"id": d, "diskId": d, "zoneId": m.existing_volumes.get(d, _zones(m)[0]), "size": 500} for d in ids]
    return {"ids": ids, "disks": disks, "id": m.region}


_CALLS: dict[str, Any] = {
    "aws:index/getCallerIdentity:getCallerIdentity": _caller_identity,
    "aws:index/getPartition:getPartition": _partition,
    "aws:ec2/getVpc:getVpc": _get_vpc,
    "aws:ec2/getSubnets:getSubnets": _get_subnets,
    "aws:ec2/getSubnet:getSubnet": _get_subnet,
    "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings": _offerings,
    "aws:ec2/getAmi:getAmi": _get_ami,
    "aws:ebs/getVolume:getVolume": _get_volume,
    "alicloud:index/getZones:getZones": _ali_zones,
    "alicloud:ecs/getImages:getImages": _ali_images,
    "alicloud:index/getAccount:getAccount": _ali_account,
    "alicloud:ecs/getEcsDisks:getEcsDisks": _ali_disks,
}


# Resources -------------------------------------------------------------------------------------------


def _instance(m: CloudMocks, name: str, i: dict) -> tuple[str, dict]:
    iid = f"i-{_hex('instance', name)}"
    return iid, {
        "arn": m.arn("ec2", f"instance/{iid}"),
        "publicIp": _ip("ip", name),
        "privateIp": _ip("pip", name, block="172.31.16"),
        "instanceState": "running",
        "spotInstanceRequestId": f"sir-{_hex('sir', name, length=8)}" if i.get("instanceMarketOptions") else "",
    }


def _volume(m: CloudMocks, name: str, i: dict) -> tuple[str, dict]:
    vid = f"vol-{_hex('volume', name)}"
    return vid, {"arn": m.arn("ec2", f"volume/{vid}")}


def _sg(m: CloudMocks, name: str, i: dict) -> tuple[str, dict]:
    sid = f"sg-{_hex('sg', name)}"
    return sid, {"arn": m.arn("ec2", f"security-group/{sid}"), "ownerId": ACCOUNT_ID}


def _sg_rule(m: CloudMocks, name: str, i: dict) -> tuple[str, dict]:
    rid = f"sgr-{_hex('sgr', name)}"
    return rid, {"arn": m.arn("ec2", f"security-group-rule/{rid}"), "securityGroupRuleId": rid}


def _key_pair(m: CloudMocks, name: str, i: dict) -> tuple[str, dict]:
    key = i.get("keyName") or f"{name}-{_hex('key', name, length=7)}"
    return key, {"keyName": key, "arn": m.arn("ec2", f"key-pair/{key}"), "keyPairId": f"key-{_hex('kp', name)}"}


def _bucket(m: CloudMocks, name: str, i: dict) -> tuple[str, dict]:
    bucket = i.get("bucket") or f"{name}-{_hex('bucket', name, length=7)}"
    return bucket, {
        "bucket": bucket,
        "arn": f"arn:aws:s3:::{bucket}",
        "bucketDomainName": f"{bucket}.s3.amazonaws.com",
        "region": m.region,
    }


def _role(m: CloudMocks, name: str, i: dict) -> tuple[str, dict]:
    role = i.get("name") or f"{name}-{_hex('role', name, length=7)}"
    return role, {"name": role, "arn": f"arn:aws:iam::{ACCOUNT_ID}:role/{role}", "uniqueId": f"AROA{_hex('r', name).upper()}"}


def _profile(m: CloudMocks, name: str, i: dict) -> tuple[str, dict]:
    prof = i.get("name") or f"{name}-{_hex('profile', name, length=7)}"
    return prof, {"name": prof, "arn": f"arn:aws:iam::{ACCOUNT_ID}:instance-profile/{prof}"}


def _schedule(m: CloudMocks, name: str, i: dict) -> tuple[str, dict]:
    sched = i.get("name") or name
    return f"default/{sched}", {"arn": m.arn("scheduler", f"schedule/default/{sched}"), "groupName": "default"}


def _static_time(m: CloudMocks, name: str, i: dict) -> tuple[str, dict]:
    value = i.get("rfc3339") or (m.now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value, {
        "rfc3339": value,
        "unix": int(parsed.timestamp()),
        "year": parsed.year,
        "month": parsed.month,
        "day": parsed.day,
        "hour": parsed.hour,
        "minute": parsed.minute,
        "second": parsed.second,
    }


def _ali_id(prefix: str):
    def make(m: CloudMocks, name: str, i: dict) -> tuple[str, dict]:
        return f"{prefix}-bp1{_hex(prefix, name, length=17)}", {}

    return make


def _ali_instance(m: CloudMocks, name: str, i: dict) -> tuple[str, dict]:
    iid = f"i-bp1{_hex('ali-instance', name)}"
    return iid, {"publicIp": _ip("ali-ip", name, block="203.0.113"), "privateIp": _ip("ali-pip", name, block="192.168.0"), "status": "Running"}


def _ali_bucket(m: CloudMocks, name: str, i: dict) -> tuple[str, dict]:
    bucket = i.get("bucket") or name
    return bucket, {"bucket": bucket, "extranetEndpoint": f"oss-{m.region}.aliyuncs.com", "intranetEndpoint": f"oss-{m.region}-internal.aliyuncs.com"}


def _ali_role(m: CloudMocks, name: str, i: dict) -> tuple[str, dict]:
    role = i.get("roleName") or i.get("name") or name
    return role, {"arn": f"acs:ram::{ALICLOUD_ACCOUNT_ID}:role/{role}", "roleId": _hex("ram", name, length=18)}


def _ali_key(m: CloudMocks, name: str, i: dict) -> tuple[str, dict]:
    key = i.get("keyPairName") or name
    return key, {"keyPairName": key, "fingerPrint": _hex("fp", name, length=32)}


_RESOURCES: dict[str, Any] = {
    "aws:ec2/instance:Instance": _instance,
    "aws:ebs/volume:Volume": _volume,
    "aws:ec2/securityGroup:SecurityGroup": _sg,
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": _sg_rule,
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": _sg_rule,
    "aws:ec2/keyPair:KeyPair": _key_pair,
    "aws:s3/bucket:Bucket": _bucket,
    "aws:iam/role:Role": _role,
    "aws:iam/instanceProfile:InstanceProfile": _profile,
    "aws:scheduler/schedule:Schedule": _schedule,
    "time:index/static:Static": _static_time,
    "alicloud:ecs/instance:Instance": _ali_instance,
    "alicloud:ecs/ecsDisk:EcsDisk": _ali_id("d"),
    "alicloud:ecs/securityGroup:SecurityGroup": _ali_id("sg"),
    "alicloud:vpc/network:Network": _ali_id("vpc"),
    "alicloud:vpc/switch:Switch": _ali_id("vsw"),
    "alicloud:oss/bucket:Bucket": _ali_bucket,
    "alicloud:ram/role:Role": _ali_role,
    "alicloud:ecs/keyPair:KeyPair": _ali_key,
    "alicloud:ecs/ecsKeyPair:EcsKeyPair": _ali_key,
}
