"""The GPU vCPU quotas a stack's instances count against, one table for the plan's advisory (offline) and
``gpulease check`` (``gpulease/lifecycle/quotas.py``, which reads the account's values).

AWS counts running instances in vCPUs per instance class and market (Service Quotas, service code ``ec2``;
https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html): ``L-417A185B`` "Running On-Demand P
instances", ``L-DB2E81BA`` "Running On-Demand G and VT instances", ``L-7212CCBC`` "All P Spot Instance Requests",
``L-3819A6DF`` "All G and VT Spot Instance Requests" (the codes as the Service Quotas console names them, e.g.
https://console.aws.amazon.com/servicequotas/home/services/ec2/quotas/L-417A185B). A new account often has 0 for them.

Alibaba Cloud has one vCPU quota per region and billing method, not per family: ECS ``DescribeAccountAttributes``
``max-postpaid-instance-vcpu-count`` (pay-as-you-go) and ``max-spot-instance-vcpu-count`` (spot), with what is in
use as ``used-…`` (https://help.aliyun.com/document_detail/73772.html). Neither cloud's value is visible offline."""

from __future__ import annotations

from dataclasses import dataclass

AWS_QUOTAS = {
    ("p", "on-demand"): ("L-417A185B", "Running On-Demand P instances"),
    ("g", "on-demand"): ("L-DB2E81BA", "Running On-Demand G and VT instances"),
    ("p", "spot"): ("L-7212CCBC", "All P Spot Instance Requests"),
    ("g", "spot"): ("L-3819A6DF", "All G and VT Spot Instance Requests"),
}
ALICLOUD_ATTRIBUTES = {
    "on-demand": ("max-postpaid-instance-vcpu-count", "used-postpaid-instance-vcpu-count"),
    "spot": ("max-spot-instance-vcpu-count", "used-spot-instance-vcpu-count"),
}


def aws_family(instance_type: str) -> str | None:
    """``p`` or ``g`` (``vt`` counts with ``g``), else None: a family these quotas do not cover."""
    family = instance_type.split(".", 1)[0].lower()
    if family.startswith("vt"):
        return "g"
    return family[0] if family[:1] in ("p", "g") else None


@dataclass(frozen=True)
class QuotaNeed:
    """vCPUs a stack runs at once against one quota: its code (AWS) or attribute (Alibaba Cloud), its name."""

    cloud: str
    market: str
    code: str
    name: str
    vcpus: int
    instances: tuple[tuple[str, int, int], ...]
    """(instance type, vCPUs each, how many)."""

    def line(self) -> str:
        what = ", ".join(f"{n} x {t} ({v} vCPUs)" for t, v, n in self.instances)
        if self.cloud == "aws":
            return (f"{self.vcpus} vCPUs of {self.name} ({self.code}, {self.market}): {what}; new accounts often "
                    f"have 0; gpulease check reads the account's value, or Service Quotas (ec2 {self.code}) before "
                    "pulumi up")
        return (f"{self.vcpus} vCPUs of the region's {self.market} vCPU quota (DescribeAccountAttributes "
                f"{self.code}, shared by every ECS instance of that billing method): {what}; not readable offline: "
                "gpulease check reads the limit and what is in use, or Quota Center (https://quotas.console.aliyun.com)")


def quota_of(cloud: str, instance_type: str, market: str) -> tuple[str, str] | None:
    """(code or attribute, name) of the quota an instance counts against; None when no GPU quota covers it."""
    if cloud == "aws":
        family = aws_family(instance_type)
        return AWS_QUOTAS[(family, market)] if family else None
    if cloud == "alicloud":
        limit = ALICLOUD_ATTRIBUTES[market][0]
        return limit, limit
    return None
