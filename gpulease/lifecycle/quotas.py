"""The account's GPU quota for the stack's instance family, read-only (the codes: ``gpulease/review/gpu_quotas.py``,
which the plan's ``quota-gpu-vcpus`` advisory reads too).

AWS counts running instances in vCPUs per family and market (Service Quotas, service code ``ec2``):

- ``L-417A185B`` "Running On-Demand P instances", ``L-DB2E81BA`` "Running On-Demand G and VT instances";
- ``L-7212CCBC`` "All P Spot Instance Requests", ``L-3819A6DF`` "All G and VT Spot Instance Requests".

(The codes as the Service Quotas console names them, e.g.
https://console.aws.amazon.com/servicequotas/home/services/ec2/quotas/L-417A185B; a new account often has 0 for
them.) ``GetServiceQuota`` answers the applied value; where an account never changed it, AWS may answer
``NoSuchResourceException`` and the default is read with ``GetAWSDefaultServiceQuota``
(https://docs.aws.amazon.com/servicequotas/2019-06-24/apireference/API_GetServiceQuota.html).

Alibaba Cloud: ECS ``DescribeAccountAttributes`` with ``AttributeName`` ``max-postpaid-instance-vcpu-count`` /
``used-postpaid-instance-vcpu-count`` (pay-as-you-go) and ``max-spot-instance-vcpu-count`` /
``used-spot-instance-vcpu-count`` (spot), per region (https://help.aliyun.com/document_detail/73772.html)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpulease.review.gpu_quotas import ALICLOUD_ATTRIBUTES, AWS_QUOTAS, aws_family

__all__ = ["ALICLOUD_ATTRIBUTES", "AWS_QUOTAS", "Need", "alicloud_quota", "aws_family", "aws_quota"]


@dataclass(frozen=True)
class Need:
    """What the stack runs at once: the instance type, its vCPUs times the nodes, the market."""

    instance_type: str
    vcpus: int
    market: str


def _code(exc: Exception) -> str:
    return str(((getattr(exc, "response", None) or {}).get("Error") or {}).get("Code") or type(exc).__name__)


def aws_quota(client: Any, need: Need) -> dict[str, Any]:
    """One check row for the AWS quota of ``need``'s family and market."""
    family = aws_family(need.instance_type)
    if family is None:
        return {"check": "quota", "ok": None, "detail": f"{need.instance_type}: not a P or G family type; its quota is "
                "not checked here", "fix": "see the EC2 quotas in the Service Quotas console"}
    code, name = AWS_QUOTAS[(family, need.market)]
    value = None
    try:
        value = float(client.get_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]["Value"])
    except Exception as exc:
        if _code(exc) != "NoSuchResourceException":
            return _unread(code, name, exc)
        try:
            value = float(client.get_aws_default_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]["Value"])
        except Exception as again:
            return _unread(code, name, again)
    ok = value >= need.vcpus
    detail = (f"{name} ({code}): {value:g} vCPUs; {need.instance_type} ({need.market}) needs {need.vcpus}")
    fix = None if ok else (f"aws service-quotas request-service-quota-increase --service-code ec2 --quota-code {code} "
                           f"--desired-value {need.vcpus} (approval takes hours to days)")
    return {"check": "quota", "ok": ok, "detail": detail, "fix": fix, "quotaCode": code, "limitVcpus": value,
            "neededVcpus": need.vcpus}


def _unread(code: str, name: str, exc: Exception) -> dict[str, Any]:
    error = (getattr(exc, "response", None) or {}).get("Error") or {}
    message = f"{error.get('Code')}: {error.get('Message', '')[:160]}" if error else " ".join(str(exc).split())[:200]
    return {"check": "quota", "ok": None, "detail": f"{name} ({code}) not read: {message}",
            "fix": "allow servicequotas:GetServiceQuota to this identity, or look it up in the Service Quotas console",
            "quotaCode": code}


def alicloud_quota(ecs: Any, region: str, need: Need) -> dict[str, Any]:
    """One check row from ``DescribeAccountAttributes``: the limit and what is in use already."""
    from alibabacloud_ecs20140526 import models

    limit_name, used_name = ALICLOUD_ATTRIBUTES[need.market]
    try:
        body = ecs.describe_account_attributes(models.DescribeAccountAttributesRequest(
            region_id=region, attribute_name=[limit_name, used_name])).body
    except Exception as exc:
        message = " ".join(str(getattr(exc, "message", exc)).split())[:200]
        return {"check": "quota", "ok": None, "detail": f"{limit_name} not read: {message}",
                "fix": "allow ecs:DescribeAccountAttributes to this identity, or see Quota Center in the console"}
    found: dict[str, float] = {}
    items = body.account_attribute_items.account_attribute_item if body.account_attribute_items else []
    for item in items or []:
        values = item.attribute_values.value_item if item.attribute_values else []
        for value in values or []:
            try:
                found[item.attribute_name] = float(value.value)
            except (TypeError, ValueError):
                continue
    if limit_name not in found:
        return {"check": "quota", "ok": None, "detail": f"{limit_name}: not in the answer", "fix": "see Quota Center"}
    limit, used = found[limit_name], found.get(used_name, 0.0)
    free = limit - used
    ok = free >= need.vcpus
    detail = (f"{limit_name}: {limit:g} vCPUs, {used:g} in use; {need.instance_type} ({need.market}) needs {need.vcpus}")
    fix = None if ok else (f"raise {limit_name} in {region} to at least {used + need.vcpus:g} in Quota Center "
                           "(https://quotas.console.aliyun.com), or stop instances that hold vCPUs")
    return {"check": "quota", "ok": ok, "detail": detail, "fix": fix, "limitVcpus": limit, "usedVcpus": used,
            "neededVcpus": need.vcpus}
