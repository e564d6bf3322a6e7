"""What the clouds require of the calls a stack's resources make: the documented preconditions, one cited row each,
every row a predicate on a rendering.

Mocks accept whatever a program registers; the clouds do not. A call made in a shape its API reference rules out
(an Elastic IP associated through an instance with several interfaces, one TerminateInstances call carrying every
node's id, a snapshot waited for with the provider's 10-minute default) fails on the first real ``pulumi up`` or,
worse, hours later at the deadline. Each row names the calls, the documented rule and its source, and a check that
reads the registered resources and returns what violates it. ``violations`` are errors (an example stack with one
fails ``tests/review/test_preconditions.py``); ``advisories`` are quotas the account may not have (they depend on
the account, which the review cannot see, so they are said, never enforced).

Mirrored in docs/provider-facts.md (the API-preconditions table), next to the replace-trigger table
(``gpulease/review/replacement.py``).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpulease.core import bake_timeouts
from gpulease.core import resources as rt
from gpulease.review.quota_rows import eip_quota, gpu_vcpu_quota, is_spot
from gpulease.review.quota_rows import gpu_vcpu_needs as gpu_vcpu_needs
from gpulease.review.render import CapturedResource, Rendering

AWS_SNAPSHOT = "aws:ebs/snapshot:Snapshot"
ALI_SNAPSHOT = "alicloud:ecs/ecsSnapshot:EcsSnapshot"
ALI_DEPLOYMENT_SET = "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet"
AWS_PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"

DEPLOYMENT_SET_MAX_INSTANCES = 20
ALI_IMAGE = "alicloud:ecs/image:Image"
# The providers' default create timeouts of a snapshot (the resource's schema.DefaultTimeout) and of an Alibaba
# Cloud image ("create - (Defaults to 10 mins)", terraform-provider-alicloud website/docs/r/image.html.markdown).
SNAPSHOT_DEFAULT_MINUTES = {AWS_SNAPSHOT: 10, ALI_SNAPSHOT: 5}
IMAGE_DEFAULT_MINUTES = {ALI_IMAGE: 10}


@dataclass(frozen=True)
class Precondition:
    """One documented precondition of the calls some registered resource types make."""

    name: str
    calls: str
    """The API calls the provider makes for these resources, where the rule applies."""
    types: tuple[str, ...]
    rule: str
    """The precondition, as the source documents it."""
    source: str
    check: Callable[[Rendering], list[str]]
    """What in the rendering breaks the rule (one line each); empty when nothing does."""
    advisory: bool = False
    """A quota of the account: said in the review, never an error (the account's own quota is not visible)."""


def _of(r: Rendering, *types: str) -> list[CapturedResource]:
    return [x for x in r.resources if x.custom and x.type in types]


def _by_id(r: Rendering) -> dict[str, CapturedResource]:
    return {x.id: x for x in r.resources if x.custom and x.id}


def _interfaces(instance: CapturedResource, r: Rendering) -> int:
    """Network interfaces an AWS instance is launched with: its template's, else its own (one by default)."""
    template_id = (instance.inputs.get("launchTemplate") or {}).get("id")
    if template_id:
        template = _by_id(r).get(template_id)
        if template is not None:
            return max(1, len(template.inputs.get("networkInterfaces") or []))
    return max(1, len(instance.inputs.get("networkInterfaces") or []))


def eip_through_interface(r: Rendering) -> list[str]:
    instances = _by_id(r)
    found = []
    for eip in _of(r, rt.AWS_EIP, rt.AWS_EIP_ASSOCIATION):
        target = eip.inputs.get("instance") or eip.inputs.get("instanceId")
        inst = instances.get(target) if target else None
        if inst is not None and _interfaces(inst, r) > 1:
            found.append(f"{eip.name}: associated through instance {inst.name}, which has {_interfaces(inst, r)} "
                         "network interfaces (AWS answers InvalidInstanceID); associate it with the primary "
                         "network interface (networkInterface)")
    return found


def eip_on_primary_interface(r: Rendering) -> list[str]:
    """Every instance with several network interfaces (an EFA node) gets its public address from an Elastic IP on
    its primary interface (RunInstances assigns none to an instance launched with more than one interface), and
    every Elastic IP bound to a network interface is bound to an instance's primary one."""
    aws_instances = _of(r, rt.AWS_INSTANCE)
    primary = {x.outputs.get("primaryNetworkInterfaceId"): x for x in aws_instances
               if x.outputs.get("primaryNetworkInterfaceId")}
    bound: dict[str, list[str]] = {}
    found = []
    for eip in _of(r, rt.AWS_EIP, rt.AWS_EIP_ASSOCIATION):
        eni = eip.inputs.get("networkInterface") or eip.inputs.get("networkInterfaceId")
        if not eni:
            continue
        inst = primary.get(eni)
        if inst is None:
            found.append(f"{eip.name}: bound to network interface {eni}, which is no instance's primary interface; "
                         "accepted: the node's primary network interface (primaryNetworkInterfaceId)")
            continue
        bound.setdefault(inst.name, []).append(eip.name)
    for inst in aws_instances:
        count = _interfaces(inst, r)
        if count < 2:
            continue
        eips = bound.get(inst.name, [])
        if len(eips) != 1:
            what = "no Elastic IP" if not eips else f"{len(eips)} Elastic IPs ({', '.join(eips)})"
            found.append(f"{inst.name}: {count} network interfaces and {what} on its primary interface; an instance "
                         "launched with several interfaces gets no public address, so it needs exactly one")
    return found


def one_id_per_terminate_call(r: Rendering) -> list[str]:
    found = []
    for schedule in _of(r, rt.AWS_SCHEDULE):
        target = schedule.inputs.get("target") or {}
        if target.get("arn") != rt.TERMINATE_TARGET:
            continue
        text = target.get("input")
        if not isinstance(text, str):
            continue  # not known before the instance exists (under mocks, or during preview)
        try:
            ids = json.loads(text or "{}").get("InstanceIds") or []
        except (ValueError, AttributeError):
            found.append(f"{schedule.name}: its TerminateInstances input is not readable JSON")
            continue
        if len(ids) > 1:
            found.append(f"{schedule.name}: one TerminateInstances call with {len(ids)} ids (one gone id and none is "
                         "terminated); one schedule per instance")
    return found


_VALID_UNTIL = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\Z")


def persistent_spot_stops(r: Rendering) -> list[str]:
    """A persistent request launched by RunInstances stops or hibernates on interruption, and ends in UTC form."""
    found = []
    for inst in _of(r, rt.AWS_INSTANCE):
        spot = ((inst.inputs.get("instanceMarketOptions") or {}).get("spotOptions")) or {}
        if spot.get("spotInstanceType") != "persistent":
            continue
        behaviour = spot.get("instanceInterruptionBehavior", "terminate")
        if behaviour not in ("stop", "hibernate"):
            found.append(f"{inst.name}: a persistent spot request with interruption behaviour {behaviour!r}; "
                         "RunInstances accepts stop or hibernate")
        until = spot.get("validUntil")
        if until is not None and not (isinstance(until, str) and _VALID_UNTIL.match(until)):
            found.append(f"{inst.name}: validUntil {until!r} is not YYYY-MM-DDTHH:MM:SSZ (UTC)")
    return found


_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?\Z")


def minutes(duration: str) -> float | None:
    """A Go duration (``90m``, ``1h30m``) in minutes; None when unreadable."""
    match = _DURATION.match(duration or "")
    if not match or not any(match.groups()):
        return None
    h, m, s = (int(g or 0) for g in match.groups())
    return h * 60 + m + s / 60


def _root_disk_gb(r: Rendering) -> int:
    sizes = [int((x.inputs.get("rootBlockDevice") or {}).get("volumeSize") or 0) for x in _of(r, rt.AWS_INSTANCE)]
    sizes += [int(x.inputs.get("systemDiskSize") or 0) for x in _of(r, rt.ALI_INSTANCE)]
    return max(sizes, default=0)


def _waits_long_enough(r: Rendering, defaults: dict[str, int], what: str) -> list[str]:
    """Every resource of ``defaults``' types waits at least the kit's bound for the largest system disk
    (``bake_timeouts.create_minutes``, the bound the program sets)."""
    needed = bake_timeouts.create_minutes(_root_disk_gb(r))
    found = []
    for res in _of(r, *defaults):
        create = res.custom_timeouts.get("create")
        waited = minutes(create) if create else defaults[res.type]
        if waited is None or waited < needed:
            found.append(f"{res.name}: waits {create or f'the default {waited:g}m'} for {what} of a "
                         f"{_root_disk_gb(r)} GiB system disk; customTimeouts.create of at least {needed}m")
    return found


def snapshot_waits_long_enough(r: Rendering) -> list[str]:
    return _waits_long_enough(r, SNAPSHOT_DEFAULT_MINUTES, "a snapshot")


def image_waits_long_enough(r: Rendering) -> list[str]:
    return _waits_long_enough(r, IMAGE_DEFAULT_MINUTES, "an image from the snapshot")


S3_OBJECT_TAG_LIMIT = 10


def object_tag_limit(r: Rendering) -> list[str]:
    return [f"{obj.name}: {len(obj.inputs.get('tags') or {})} tags on an S3 object (PutObject fails with InvalidTag); "
            f"at most {S3_OBJECT_TAG_LIMIT}"
            for obj in _of(r, *rt.AWS_BUCKET_OBJECTS) if len(obj.inputs.get("tags") or {}) > S3_OBJECT_TAG_LIMIT]


def _subnet(instance: CapturedResource, r: Rendering) -> Any:
    template_id = (instance.inputs.get("launchTemplate") or {}).get("id")
    template = _by_id(r).get(template_id) if template_id else None
    if template is not None:
        return ((template.inputs.get("networkInterfaces") or [{}])[0]).get("subnetId")
    return instance.inputs.get("subnetId")


def placement_group_one_zone(r: Rendering) -> list[str]:
    groups: dict[str, set] = defaultdict(set)
    for inst in _of(r, rt.AWS_INSTANCE):
        group = inst.inputs.get("placementGroup")
        if group:
            groups[str(group)].add(str(_subnet(inst, r)))
    return [f"placement group {g}: its instances are in {len(s)} subnets; a cluster placement group is one zone"
            for g, s in groups.items() if len(s) > 1]


def deployment_set_rules(r: Rendering) -> list[str]:
    members: dict[str, list[CapturedResource]] = defaultdict(list)
    for inst in _of(r, rt.ALI_INSTANCE):
        if inst.inputs.get("deploymentSetId"):
            members[str(inst.inputs["deploymentSetId"])].append(inst)
    found = []
    for set_id, insts in members.items():
        if len(insts) > DEPLOYMENT_SET_MAX_INSTANCES:
            found.append(f"deployment set {set_id}: {len(insts)} instances, at most {DEPLOYMENT_SET_MAX_INSTANCES}")
        if len({i.inputs.get("availabilityZone") for i in insts}) > 1:
            found.append(f"deployment set {set_id}: instances in several zones")
        found += [f"{i.name}: a spot instance in deployment set {set_id}" for i in insts if is_spot(i)]
    return found


AWS_API = "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/"

PRECONDITIONS: tuple[Precondition, ...] = (
    Precondition(
        "eip-through-interface", "AssociateAddress", (rt.AWS_EIP, rt.AWS_EIP_ASSOCIATION),
        "InstanceId: \"The instance must have exactly one attached network interface\"; NetworkInterfaceId: \"If the "
        "instance has more than one network interface, you must specify a network interface ID\"",
        AWS_API + "API_AssociateAddress.html", eip_through_interface,
    ),
    Precondition(
        "eip-on-primary-interface", "RunInstances, AssociateAddress", (rt.AWS_INSTANCE, rt.AWS_EIP),
        "AssociatePublicIpAddress: \"You cannot specify more than one network interface in the request\"; an "
        "instance with several interfaces gets its public address from an Elastic IP on its primary interface",
        AWS_API + "API_InstanceNetworkInterfaceSpecification.html", eip_on_primary_interface,
    ),
    Precondition(
        "terminate-one-id-per-call", "TerminateInstances (EventBridge Scheduler target)", (rt.AWS_SCHEDULE,),
        "\"If you specify multiple instances and the request fails (for example, because of a single incorrect "
        "instance ID), none of the instances are terminated\"",
        AWS_API + "API_TerminateInstances.html", one_id_per_terminate_call,
    ),
    Precondition(
        "persistent-spot-stop", "RunInstances (instance market options)", (rt.AWS_INSTANCE,),
        "\"For RunInstances, persistent Spot Instance requests are only supported when the instance interruption "
        "behavior is either hibernate or stop\"; ValidUntil \"in UTC format (YYYY-MM-DDTHH:MM:SSZ)\"",
        AWS_API + "API_SpotMarketOptions.html", persistent_spot_stops,
    ),
    Precondition(
        "snapshot-create-timeout", "CreateSnapshot, then DescribeSnapshots until completed / accomplished",
        (AWS_SNAPSHOT, ALI_SNAPSHOT),
        "the provider waits its create timeout for the snapshot, by default 10 minutes (aws_ebs_snapshot) or 5 "
        "(alicloud_ecs_snapshot); a first snapshot copies every written block",
        "terraform-provider-aws internal/service/ec2/ebs_snapshot.go; terraform-provider-alicloud "
        "alicloud/resource_alicloud_ecs_snapshot.go (schema.DefaultTimeout)", snapshot_waits_long_enough,
    ),
    Precondition(
        "image-create-timeout", "CreateImage from the snapshot, then DescribeImages until Available", (ALI_IMAGE,),
        "the provider waits its create timeout for the image: \"create - (Defaults to 10 mins)\"; how long an image "
        "from a system-disk snapshot takes is not documented",
        "terraform-provider-alicloud website/docs/r/image.html.markdown (Timeouts)", image_waits_long_enough,
    ),
    Precondition(
        "s3-object-tag-limit", "PutObject (x-amz-tagging)", rt.AWS_BUCKET_OBJECTS,
        "\"You can associate up to 10 tags with an object\"",
        "https://docs.aws.amazon.com/AmazonS3/latest/userguide/tagging-managing.html", object_tag_limit,
    ),
    Precondition(
        "placement-group-one-zone", "RunInstances into a cluster placement group", (rt.AWS_INSTANCE, AWS_PLACEMENT_GROUP),
        "\"A cluster placement group can't span multiple Availability Zones\"",
        "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/placement-strategies.html", placement_group_one_zone,
    ),
    Precondition(
        "deployment-set-limits", "RunInstances into a deployment set", (rt.ALI_INSTANCE, ALI_DEPLOYMENT_SET),
        "使用限制 (limits): \"部署集内不能创建抢占式实例\" (no preemptible instance can be created in a deployment "
        "set); \"网络低时延策略:在部署集内创建ECS实例时,所有实例必须在同一可用区,同一可用区最多创建20台ECS实例\" "
        "(low latency strategy: every instance in one zone, at most 20 there). Which families a strategy supports is "
        "DescribeDeploymentSetSupportedInstanceTypeFamily's answer (not checked offline)",
        "https://www.alibabacloud.com/help/zh/doc-detail/91258.htm", deployment_set_rules,
    ),
    Precondition(
        "eip-quota", "AllocateAddress", (rt.AWS_EIP,),
        "\"By default, all AWS accounts have a quota of five (5) Elastic IP addresses per Region\"",
        "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/elastic-ip-addresses-eip.html#using-instance-addressing-limit",
        eip_quota, advisory=True,
    ),
    Precondition(
        "gpu-vcpus", "RunInstances (AWS), RunInstances / CreateInstance (Alibaba Cloud)", (rt.AWS_INSTANCE, rt.ALI_INSTANCE),
        "On-Demand and Spot instances are limited by vCPU-based quotas per instance class ('Running On-Demand P "
        "instances' L-417A185B, 'Running On-Demand G and VT instances' L-DB2E81BA, 'All P Spot Instance Requests' "
        "L-7212CCBC, 'All G and VT Spot Instance Requests' L-3819A6DF); Alibaba Cloud: one vCPU quota per region "
        "and billing method (DescribeAccountAttributes max-postpaid-instance-vcpu-count, "
        "max-spot-instance-vcpu-count, https://help.aliyun.com/document_detail/73772.html)",
        "https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html", gpu_vcpu_quota, advisory=True,
    ),
)


MANDATORY = ("eip-through-interface",)
"""The rows whose failure leaves paid resources half-deployed (AssociateAddress fails after the instances exist):
mandatory findings of ``gpulease plan`` (``api-preconditions``); every other violated row is an advisory one."""


def violations(r: Rendering) -> list[tuple[str, str]]:
    """(row name, what breaks it) for every precondition the rendering violates."""
    return [(p.name, line) for p in PRECONDITIONS if not p.advisory for line in p.check(r)]


def advisories(r: Rendering) -> list[tuple[str, str]]:
    """(row name, what to check) for the quotas the stack may exhaust."""
    return [(p.name, line) for p in PRECONDITIONS if p.advisory for line in p.check(r)]


def preconditions_table() -> str:
    """The documentation's table of these rows (docs/provider-facts.md)."""
    lines = ["| precondition | calls | resource types | rule | kind | source |", "| --- | --- | --- | --- | --- | --- |"]
    for p in PRECONDITIONS:
        types = ", ".join(f"`{t}`" for t in p.types)
        source = p.source if not p.source.startswith("https://") else f"[doc]({p.source})"
        kind = "advisory (quota)" if p.advisory else ("mandatory" if p.name in MANDATORY else "advisory")
        lines.append(f"| `{p.name}` | {p.calls} | {types} | {p.rule} | {kind} | {source} |")
    return "\n".join(lines)
