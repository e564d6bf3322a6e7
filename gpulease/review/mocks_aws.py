"""The AWS answers of the mocks: invokes (account, VPC, subnets, offerings, images, volumes) and resources."""

from __future__ import annotations

from typing import Any

from gpulease.core import resources as rt
from gpulease.review.mock_ids import ACCOUNT_ID, _hex, _ip, _zones
from gpulease.review.mock_registry import MockState, register_answers


def _caller_identity(m: MockState, a: dict) -> dict:
    return {"accountId": ACCOUNT_ID, "arn": f"arn:aws:iam::{ACCOUNT_ID}:user/ci", "userId": "AIDAEXAMPLE", "id": ACCOUNT_ID}


def _partition(m: MockState, a: dict) -> dict:
    return {"partition": "aws", "dnsSuffix": "amazonaws.com", "id": "aws", "reverseDnsPrefix": "com.amazonaws"}


def _get_vpc(m: MockState, a: dict) -> dict:
    vid = a.get("id") or f"vpc-{_hex('vpc', m.region)}"
    return {
        "id": vid, "cidrBlock": "172.31.0.0/16", "default": bool(a.get("default")), "arn": m.arn("ec2", f"vpc/{vid}"),
        "cidrBlockAssociations": [{"associationId": f"vpc-cidr-assoc-{_hex('assoc', vid)}", "cidrBlock": "172.31.0.0/16",
                                   "state": "associated"}],
        "dhcpOptionsId": f"dopt-{_hex('dopt', m.region)}", "enableDnsHostnames": True, "enableDnsSupport": True,
        "enableNetworkAddressUsageMetrics": False, "instanceTenancy": "default", "ipv6AssociationId": "",
        "ipv6CidrBlock": "", "mainRouteTableId": f"rtb-{_hex('rtb', vid)}", "ownerId": ACCOUNT_ID, "state": "available",
        "tags": a.get("tags") or {}, "filters": a.get("filters"), "region": m.region,
    }


def _subnet_id(zone: str) -> str:
    return f"subnet-{_hex('subnet', zone)}"


def _get_subnets(m: MockState, a: dict) -> dict:
    zones = _zones(m)
    for f in a.get("filters") or []:
        if f.get("name") == "availability-zone":
            zones = [z for z in zones if z in f.get("values", [])]
    return {"ids": [_subnet_id(z) for z in zones], "id": m.region, "filters": a.get("filters"),
            "tags": a.get("tags") or {}, "region": m.region}


def _get_subnet(m: MockState, a: dict) -> dict:
    sid = a.get("id")
    zones = _zones(m)
    wanted = [v for f in a.get("filters") or [] if f.get("name") == "availability-zone" for v in f.get("values") or []]
    zone = next((z for z in zones if _subnet_id(z) == sid), None) or a.get("availabilityZone") or next(
        (z for z in zones if z in wanted), zones[0])
    sid = sid or _subnet_id(zone)
    return {
        "id": sid,
        "vpcId": f"vpc-{_hex('vpc', m.region)}",
        "availabilityZone": zone,
        "availabilityZoneId": f"{m.region.replace('-', '')[:5]}-az{zones.index(zone) + 1 if zone in zones else 1}",
        "cidrBlock": "172.31.0.0/20",  # one CIDR for every zone: the cluster tests place nodes in it
        "availableIpAddressCount": 4000,
        "arn": m.arn("ec2", f"subnet/{sid}"),
        "assignIpv6AddressOnCreation": False, "customerOwnedIpv4Pool": "",
        "defaultForAz": True, "enableDns64": False, "enableLniAtDeviceIndex": 0,
        "enableResourceNameDnsARecordOnLaunch": False, "enableResourceNameDnsAaaaRecordOnLaunch": False,
        "ipv6CidrBlock": "", "ipv6CidrBlockAssociationId": "", "ipv6Native": False, "mapCustomerOwnedIpOnLaunch": False,
        "mapPublicIpOnLaunch": True, "outpostArn": "", "ownerId": ACCOUNT_ID,
        "privateDnsHostnameTypeOnLaunch": "ip-name", "state": "available", "tags": a.get("tags") or {},
        "filters": a.get("filters"), "region": m.region,
    }


def _offerings(m: MockState, a: dict) -> dict:
    types = [v for f in a.get("filters") or [] if f.get("name") == "instance-type" for v in f.get("values", [])]
    # Large GPU types are offered in fewer zones, as in real regions.
    zones = _zones(m)[1:] if any(t.startswith(("p4", "p5")) for t in types) else _zones(m)
    return {
        "locations": zones,
        "instanceTypes": [t for t in types for _ in zones],
        "locationTypes": ["availability-zone"] * len(zones),
        "id": m.region,
    }


def _get_ami(m: MockState, a: dict) -> dict:
    """Any filter (name, owner-alias, architecture, image-id...) or name regex finds one image: named after the
    name filter when there is one (its ``*`` as a date), its id a hash of the region and what was asked."""
    filters = a.get("filters") or []
    name = next((f["values"][0] for f in filters if f.get("name") == "name" and f.get("values")), None)
    image_id = next((f["values"][0] for f in filters if f.get("name") == "image-id" and f.get("values")), None)
    arch = next((f["values"][0] for f in filters if f.get("name") == "architecture" and f.get("values")), "x86_64")
    key = name or a.get("nameRegex") or str(sorted((f.get("name"), tuple(f.get("values") or ())) for f in filters))
    ami = image_id or f"ami-{_hex('ami', m.region, key if (name or a.get('nameRegex') or filters) else 'image')}"
    shown = (name or "image").replace("*", "20261101")
    owner = "898082745236"
    return {
        "id": ami, "imageId": ami, "name": shown, "architecture": arch, "arn": m.arn("ec2", f"image/{ami}", account=False),
        "creationDate": "2026-11-01T00:00:00.000Z", "deprecationTime": "2028-11-01T00:00:00.000Z",
        "description": shown, "bootMode": "", "enaSupport": True, "hypervisor": "xen",
        "imageLocation": f"amazon/{shown}", "imageOwnerAlias": "amazon", "imageType": "machine",
        "imdsSupport": "v2.0", "kernelId": "", "lastLaunchedTime": "", "ownerId": owner,
        "platform": "", "platformDetails": "Linux/UNIX", "productCodes": [], "public": True, "ramdiskId": "",
        "rootDeviceName": "/dev/sda1", "rootDeviceType": "ebs", "rootSnapshotId": f"snap-{_hex('snap', ami)}",
        "sriovNetSupport": "simple", "state": "available", "stateReason": {"code": "UNSET", "message": "UNSET"},
        "tags": {}, "tpmSupport": "", "usageOperation": "RunInstances", "virtualizationType": "hvm",
        "blockDeviceMappings": [{"deviceName": "/dev/sda1", "ebs": {"delete_on_termination": "true", "encrypted": "false",
                                 "iops": "3000", "snapshot_id": f"snap-{_hex('snap', ami)}", "throughput": "125",
                                 "volume_size": "75", "volume_type": "gp3"}, "noDevice": "", "virtualName": ""}],
        "filters": a.get("filters"), "owners": a.get("owners"), "nameRegex": a.get("nameRegex"),
        "mostRecent": a.get("mostRecent"), "executableUsers": a.get("executableUsers"),
        "includeDeprecated": a.get("includeDeprecated"), "allowUnsafeFilter": a.get("allowUnsafeFilter"),
        "uefiData": "", "region": m.region,
    }


def _get_volume(m: MockState, a: dict) -> dict:
    vid = next((f["values"][0] for f in a.get("filters") or [] if f.get("name") == "volume-id"), "vol-0")
    zone = m.existing_volumes.get(vid, _zones(m)[0])
    return {"id": vid, "volumeId": vid, "availabilityZone": zone, "size": 500, "encrypted": True, "volumeType": "gp3"}




def _instance(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    iid = f"i-{_hex('instance', name)}"
    # Launched with several interfaces (a cluster node's EFA launch template), an instance gets no public address
    # of its own (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/using-instance-addressing.html).
    several = bool(i.get("launchTemplate")) and "associatePublicIpAddress" not in i
    return iid, {
        "arn": m.arn("ec2", f"instance/{iid}"),
        "publicIp": "" if several else _ip("ip", name),
        "primaryNetworkInterfaceId": f"eni-{_hex('eni', name)}",
        "privateIp": _ip("pip", name, block="172.31.16"),
        "instanceState": "running",
        "spotInstanceRequestId": f"sir-{_hex('sir', name, length=8)}" if i.get("instanceMarketOptions") else "",
        # What the provider reads back for a spot instance, and what its delete cancels the request by.
        "instanceLifecycle": "spot" if i.get("instanceMarketOptions") else "",
        "rootBlockDevice": {**(i.get("rootBlockDevice") or {}), "volumeId": f"vol-{_hex('root', name)}",
                            "deviceName": "/dev/sda1"},
    }


def _volume(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    vid = f"vol-{_hex('volume', name)}"
    return vid, {"arn": m.arn("ec2", f"volume/{vid}")}


def _sg(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    sid = f"sg-{_hex('sg', name)}"
    return sid, {"arn": m.arn("ec2", f"security-group/{sid}"), "ownerId": ACCOUNT_ID}


def _sg_rule(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    rid = f"sgr-{_hex('sgr', name)}"
    return rid, {"arn": m.arn("ec2", f"security-group-rule/{rid}"), "securityGroupRuleId": rid}


def _key_pair(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    key = i.get("keyName") or f"{name}-{_hex('key', name, length=7)}"
    return key, {"keyName": key, "arn": m.arn("ec2", f"key-pair/{key}"), "keyPairId": f"key-{_hex('kp', name)}"}


def _bucket(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    bucket = i.get("bucket") or f"{name}-{_hex('bucket', name, length=7)}"
    return bucket, {
        "bucket": bucket,
        "arn": f"arn:aws:s3:::{bucket}",
        "bucketDomainName": f"{bucket}.s3.amazonaws.com",
        "region": i.get("region") or (m.region if m.region_given else ""),
    }


def _role(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    role = i.get("name") or f"{name}-{_hex('role', name, length=7)}"
    return role, {"name": role, "arn": f"arn:aws:iam::{ACCOUNT_ID}:role/{role}", "uniqueId": f"AROA{_hex('r', name).upper()}"}


def _profile(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    prof = i.get("name") or f"{name}-{_hex('profile', name, length=7)}"
    return prof, {"name": prof, "arn": f"arn:aws:iam::{ACCOUNT_ID}:instance-profile/{prof}"}


def _schedule(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    sched = i.get("name") or name
    return f"default/{sched}", {"arn": m.arn("scheduler", f"schedule/default/{sched}"), "groupName": "default"}


def _launch_template(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    lid = f"lt-{_hex('lt', name)}"
    return lid, {"arn": m.arn("ec2", f"launch-template/{lid}"), "latestVersion": 1, "defaultVersion": 1}


def _placement_group(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    group = i.get("name") or name
    return group, {"name": group, "arn": m.arn("ec2", f"placement-group/{group}"), "placementGroupId": f"pg-{_hex('pg', name)}"}


def _eip(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    return f"eipalloc-{_hex('eip', name)}", {"publicIp": _ip("eip", name), "allocationId": f"eipalloc-{_hex('eip', name)}"}


def _prefixed(prefix: str, arn_kind: str) -> Any:
    """Resources whose id is ``<prefix>-<hex>`` (a VPC, a subnet, a route table, a NAT gateway ...)."""
    def answer(m: MockState, name: str, i: dict) -> tuple[str, dict]:
        rid = f"{prefix}-{_hex(prefix, name)}"
        return rid, {"arn": m.arn("ec2", f"{arn_kind}/{rid}"), "ownerId": ACCOUNT_ID}
    return answer


def _named(service: str, kind: str, key: str = "name") -> Any:
    """Resources whose id is their name (given, or the engine's auto-name: the name and seven characters)."""
    def answer(m: MockState, name: str, i: dict) -> tuple[str, dict]:
        rid = i.get(key) or f"{name}-{_hex(kind, name, length=7)}"
        return rid, {key: rid, "arn": m.arn(service, f"{kind}/{rid}")}
    return answer


def _load_balancer(m: MockState, name: str, i: dict) -> tuple[str, dict]:
    lb = i.get("name") or f"{name}-{_hex('lb', name, length=7)}"
    kind = "app" if i.get("loadBalancerType", "application") == "application" else "net"
    arn = m.arn("elasticloadbalancing", f"loadbalancer/{kind}/{lb}/{_hex('lbid', name, length=16)}")
    return arn, {"arn": arn, "name": lb, "dnsName": f"{lb}-{int(_hex('dns', name, length=8), 16)}.{m.region}.elb.amazonaws.com"}


CALLS: dict[str, Any] = {
    "aws:index/getCallerIdentity:getCallerIdentity": _caller_identity,
    "aws:index/getPartition:getPartition": _partition,
    "aws:ec2/getVpc:getVpc": _get_vpc,
    "aws:ec2/getSubnets:getSubnets": _get_subnets,
    "aws:ec2/getSubnet:getSubnet": _get_subnet,
    "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings": _offerings,
    "aws:ec2/getAmi:getAmi": _get_ami,
    "aws:ebs/getVolume:getVolume": _get_volume,
}

RESOURCES: dict[str, Any] = {
    rt.AWS_INSTANCE: _instance,
    rt.AWS_VOLUME: _volume,
    rt.AWS_SECURITY_GROUP: _sg,
    rt.AWS_INGRESS_RULE: _sg_rule,
    rt.AWS_EGRESS_RULE: _sg_rule,
    "aws:ec2/keyPair:KeyPair": _key_pair,
    rt.AWS_BUCKET: _bucket,
    "aws:iam/role:Role": _role,
    "aws:iam/instanceProfile:InstanceProfile": _profile,
    rt.AWS_SCHEDULE: _schedule,
    rt.AWS_LAUNCH_TEMPLATE: _launch_template,
    rt.AWS_SPOT_REQUEST: _prefixed("sir", "spot-instances-request"),  # EC2's request ids: sir-...
    "aws:ec2/placementGroup:PlacementGroup": _placement_group,
    rt.AWS_EIP: _eip,
    "aws:ec2/vpc:Vpc": _prefixed("vpc", "vpc"),
    "aws:ec2/subnet:Subnet": _prefixed("subnet", "subnet"),
    "aws:ec2/internetGateway:InternetGateway": _prefixed("igw", "internet-gateway"),
    "aws:ec2/routeTable:RouteTable": _prefixed("rtb", "route-table"),
    "aws:ec2/natGateway:NatGateway": _prefixed("nat", "natgateway"),
    "aws:eks/cluster:Cluster": _named("eks", "cluster"),
    rt.AWS_AUTOSCALING_GROUP: _named("autoscaling", "autoScalingGroup"),
    "aws:lb/loadBalancer:LoadBalancer": _load_balancer,
}

register_answers(CALLS, RESOURCES)
