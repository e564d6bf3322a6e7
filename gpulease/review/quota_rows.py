"""The quota rows of the preconditions table (``gpulease/review/preconditions.py``): what a stack may use of the
account's Elastic IP and GPU vCPU quotas. Advisory: the account's own quotas are not visible offline."""

from __future__ import annotations

from collections import Counter, defaultdict

from gpulease.core import resources as rt
from gpulease.core.catalog.loader import load_catalog
from gpulease.core.compute import form_of
from gpulease.review import gpu_quotas
from gpulease.review.render import CapturedResource, Rendering

DEFAULT_EIP_QUOTA = 5


def _of(r: Rendering, *types: str) -> list[CapturedResource]:
    return [x for x in r.resources if x.custom and x.type in types]


def is_spot(inst: CapturedResource) -> bool:
    """An Alibaba Cloud instance's spot strategy asks for spot."""
    return inst.inputs.get("spotStrategy") not in (None, "", "NoSpot")


def eip_quota(r: Rendering) -> list[str]:
    count = len(_of(r, rt.AWS_EIP))
    if count < DEFAULT_EIP_QUOTA - 1:
        return []
    return [f"{count} Elastic IPs: the default quota is {DEFAULT_EIP_QUOTA} per Region and account, shared with "
            "everything else there; check the 'EC2-VPC Elastic IPs' quota in Service Quotas before pulumi up"]


def _market(inst: CapturedResource, r: Rendering) -> str:
    """``spot`` or ``on-demand``: an AWS instance's market options (its own, else its launch template's); an Alibaba
    Cloud instance's spot strategy."""
    if inst.type == rt.ALI_INSTANCE:
        return "spot" if is_spot(inst) else "on-demand"
    options = inst.inputs.get("instanceMarketOptions")
    template_id = (inst.inputs.get("launchTemplate") or {}).get("id")
    template = {x.id: x for x in r.resources if x.custom and x.id}.get(template_id) if template_id else None
    if not options and template is not None:
        options = template.inputs.get("instanceMarketOptions")
    return "spot" if isinstance(options, dict) and options.get("marketType", "spot") == "spot" else "on-demand"


def gpu_vcpu_needs(r: Rendering) -> list[gpu_quotas.QuotaNeed]:
    """vCPUs per GPU quota (AWS: the class and market's quota code; Alibaba Cloud: the billing method's vCPU
    attribute): every GPU instance's vCPUs (the catalog's) times how many the stack runs."""
    counted: dict[tuple[str, str, str, str], Counter] = defaultdict(Counter)
    for inst in _of(r, rt.AWS_INSTANCE, rt.ALI_INSTANCE):
        cloud = "aws" if inst.type == rt.AWS_INSTANCE else "alicloud"
        itype = str(inst.inputs.get("instanceType") or "")
        market = _market(inst, r)
        quota = gpu_quotas.quota_of(cloud, itype, market)
        if quota is None or not _vcpus(cloud, itype):
            continue
        counted[(cloud, market, *quota)][itype] += 1
    return [gpu_quotas.QuotaNeed(cloud, market, code, name, sum(_vcpus(cloud, t) * n for t, n in types.items()),
                                 tuple((t, _vcpus(cloud, t), n) for t, n in sorted(types.items())))
            for (cloud, market, code, name), types in sorted(counted.items())]


def uncounted_compute(r: Rendering) -> list[str]:
    """The compute units ``gpu_vcpu_needs`` does not count: every compute form other than a plain instance (fleets,
    groups, node groups, spot requests), and plain instances whose type is not their own (a launch template's)."""
    found = []
    for x in r.resources:
        form = form_of(x.type) if x.custom else None
        if form is None or form.role != "compute":
            continue
        if x.type not in (rt.AWS_INSTANCE, rt.ALI_INSTANCE):
            found.append(f"{form.label} {x.name}")
        elif not isinstance(x.inputs.get("instanceType"), str) or not x.inputs.get("instanceType"):
            found.append(f"{form.label} {x.name} (its type is not its own)")
    return found


def gpu_vcpu_quota(r: Rendering) -> list[str]:
    """What the account's GPU vCPU quotas must allow, one line per quota (its code and the vCPUs the stack needs).
    Said for the kit's own stacks (a ``gpulease:`` component in the rendering), whose GPUs are plain instances;
    another program may take GPUs through fleets, groups or templates this row does not count, and a partial sum
    would understate its need. A kit stack that adds compute of its own (a fleet beside the component) is said as
    "at least", with what was not counted named."""
    if not any(x.type.startswith("gpulease:") for x in r.resources):
        return []
    lines = [need.line() for need in gpu_vcpu_needs(r)]
    uncounted = uncounted_compute(r)
    if not uncounted:
        return lines
    named = ", ".join(uncounted[:5]) + (f" and {len(uncounted) - 5} more" if len(uncounted) > 5 else "")
    return [f"at least {line}" for line in lines] + [
        f"not counted in any GPU vCPU quota above: {named}; their GPU instances count against the same quotas"]


def _vcpus(cloud: str, instance_type: str) -> int:
    found = load_catalog().get(cloud, instance_type)
    return found.vcpu if found is not None else 0
