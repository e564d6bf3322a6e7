"""Hand-made resource sets for the policy tests, run through the same analyzer path as ``gpulease plan``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from gpulease.core import vocabulary as v
from gpulease.review.policy_runner import PolicyResult, PolicyRunner
from gpulease.review.render import CapturedResource, Rendering
from tests.support.clock import FIXED_NOW
from tests.support.paths import FIXTURES

NOW = FIXED_NOW
HANDWRITTEN = FIXTURES / "handwritten"
"""A Pulumi project written by hand with pulumi_aws, missing every guardrail on purpose."""
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
"""The engine's sentinel for a string not known during preview."""

STACK = "test"
PROJECT = "handmade"


def urn(type_: str, name: str) -> str:
    return f"urn:pulumi:{STACK}::{PROJECT}::{type_}::{name}"


def at(hours: float) -> str:
    return v.rfc3339(NOW + timedelta(hours=hours))


def tags(**overrides: Any) -> dict[str, str]:
    """A complete, valid accounting tag set (expires in 8 h), with keys replaced or removed (value None)."""
    base = {
        v.TAG_OWNER: "alice@example.com",
        v.TAG_PROJECT: "llm",
        v.TAG_EXPERIMENT: "exp1",
        v.TAG_COST_CENTER: "ml",
        v.TAG_BUDGET_USD: "40",
        v.TAG_EXPIRES_AT: at(8),
        v.TAG_MAX_RUNTIME_HOURS: "8",
        v.TAG_CHECKPOINT_URI: "s3://ckpt-bucket/exp1/",
        v.TAG_MANAGED_BY: v.MANAGED_BY_VALUE,
    }
    for key, value in overrides.items():
        full = {
            "owner": v.TAG_OWNER, "budget": v.TAG_BUDGET_USD, "expires": v.TAG_EXPIRES_AT,
            "checkpoint": v.TAG_CHECKPOINT_URI, "reason": v.TAG_ON_DEMAND_REASON, "retain": v.TAG_RETAIN,
            "max_hours": v.TAG_MAX_RUNTIME_HOURS, "managed": v.TAG_MANAGED_BY, "experiment": v.TAG_EXPERIMENT,
        }[key]
        if value is None:
            base.pop(full, None)
        else:
            base[full] = value
    return base


def res(
    type_: str,
    name: str,
    inputs: dict[str, Any],
    *,
    protect: bool = False,
    retain_on_delete: bool = False,
    dependencies: list[str] | None = None,
    property_dependencies: dict[str, list[str]] | None = None,
    outputs: dict[str, Any] | None = None,
) -> CapturedResource:
    return CapturedResource(
        urn=urn(type_, name),
        type=type_,
        name=name,
        custom=True,
        inputs=inputs,
        outputs=outputs if outputs is not None else dict(inputs),
        id=None,
        parent=None,
        provider=None,
        protect=protect,
        retain_on_delete=retain_on_delete,
        ignore_changes=[],
        dependencies=dependencies or [],
        property_dependencies=property_dependencies or {},
        delete_before_replace=False,
        replace_on_changes=[],
    )


def stack(*resources: CapturedResource, region: str | None = None) -> Rendering:
    ali = any(r.type.startswith("alicloud:") for r in resources)
    key = "alicloud:region" if ali else "aws:region"
    region = region or ("cn-hangzhou" if ali else "us-east-1")
    return Rendering(project=PROJECT, stack=STACK, config={key: region}, resources=list(resources))


def analyze(*resources: CapturedResource, config: dict[str, Any] | None = None, region: str | None = None) -> PolicyResult:
    return PolicyRunner(config=config).analyze(stack(*resources, region=region), now=NOW)


def found(result: PolicyResult, policy: str | None = None) -> list[tuple[str, str, str | None, str]]:
    """``(policy, level, resource name, finding)`` for each violation (of one policy when named)."""
    return [
        (x.policy, x.level, x.resource_name, x.detail)
        for x in result.violations
        if policy is None or x.policy == policy
    ]


# --- compliant building blocks ---------------------------------------------------------------------------------

AWS_INSTANCE = "aws:ec2/instance:Instance"
AWS_SCHEDULE = "aws:scheduler/schedule:Schedule"
AWS_BUCKET = "aws:s3/bucket:Bucket"
ALI_INSTANCE = "alicloud:ecs/instance:Instance"


def aws_gpu(name: str = "gpu", **changes: Any) -> dict[str, Any]:
    inputs: dict[str, Any] = {
        "instanceType": "g5.xlarge",
        "ami": "ami-0123456789abcdef0",
        "instanceMarketOptions": {"marketType": "spot", "spotOptions": {"instanceInterruptionBehavior": "terminate"}},
        "metadataOptions": {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 2},
        "rootBlockDevice": {"encrypted": True, "volumeSize": 100, "volumeType": "gp3"},
        "tags": tags(),
    }
    inputs.update(changes)
    return inputs


def aws_schedule_for(instance_name: str, fire_in_hours: float = 8, *, depends: bool = True,
                     instance_input: str = UNKNOWN) -> CapturedResource:
    target = {"arn": "arn:aws:scheduler:::aws-sdk:ec2:terminateInstances", "roleArn": "arn:aws:iam::1:role/x",
              "input": instance_input}
    moment = (NOW + timedelta(hours=fire_in_hours)).strftime("%Y-%m-%dT%H:%M:%S")
    inst_urn = urn(AWS_INSTANCE, instance_name)
    return res(
        AWS_SCHEDULE,
        f"{instance_name}-deadline",
        {"scheduleExpression": f"at({moment})", "scheduleExpressionTimezone": "UTC",
         "flexibleTimeWindow": {"mode": "OFF"}, "target": target},
        dependencies=[inst_urn] if depends else [],
        property_dependencies={"target": [inst_urn]} if depends else {},
    )


def checkpoint_bucket(name: str = "ckpt-bucket") -> list[CapturedResource]:
    """An AWS checkpoint bucket as the components build it: tagged, blocked, versioned, with lifecycle rules."""
    bucket = res(AWS_BUCKET, name, {"bucket": name, "tags": tags(retain="true")}, retain_on_delete=True)
    deps = {"bucket": [bucket.urn]}
    return [
        bucket,
        res("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", f"{name}-pab",
            {"bucket": name, "blockPublicAcls": True, "blockPublicPolicy": True, "ignorePublicAcls": True,
             "restrictPublicBuckets": True}, property_dependencies=deps),
        res("aws:s3/bucketVersioning:BucketVersioning", f"{name}-versioning",
            {"bucket": name, "versioningConfiguration": {"status": "Enabled"}}, property_dependencies=deps),
        res("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration", f"{name}-lifecycle",
            {"bucket": name, "rules": [{"id": "expire", "status": "Enabled", "expiration": {"days": 30}}]},
            property_dependencies=deps),
    ]


def aws_budget(name: str = "budget", tag: tuple[str, str] = (v.TAG_EXPERIMENT, "exp1"),
               **changes: Any) -> CapturedResource:
    """A budget alert as components/aws/budget.py builds it: COST, 40 USD, filtered by a tag of the instance
    (``tags()`` carries no stack tag: the experiment's stands in), e-mails at 50/80/100% (actual and forecast)."""
    inputs: dict[str, Any] = {
        "name": "gpulease-llm-stack", "budgetType": "COST", "limitAmount": "40", "limitUnit": "USD",
        "timeUnit": "ANNUALLY",
        "costFilters": [{"name": "TagKeyValue", "values": [f"user:{tag[0]}${tag[1]}"]}],
        "notifications": [
            {"comparisonOperator": "GREATER_THAN", "notificationType": kind, "threshold": t,
             "thresholdType": "PERCENTAGE", "subscriberEmailAddresses": ["alice@example.com"]}
            for t in (50, 80, 100) for kind in ("ACTUAL", "FORECASTED")
        ],
        "tags": tags(),
    }
    inputs.update(changes)
    return res("aws:budgets/budget:Budget", name, inputs)


def compliant_aws_stack() -> list[CapturedResource]:
    return [res(AWS_INSTANCE, "gpu", aws_gpu()), aws_schedule_for("gpu"), *checkpoint_bucket(), aws_budget()]


def ali_gpu(**changes: Any) -> dict[str, Any]:
    inputs: dict[str, Any] = {
        "instanceType": "ecs.gn7i-c8g1.2xlarge",
        "imageId": "ubuntu_22_04_x64_20G_alibase_20261101.vhd",
        "spotStrategy": "SpotAsPriceGo",
        "autoReleaseTime": at(8),
        "httpTokens": "required",
        "systemDiskEncrypted": True,
        "systemDiskCategory": "cloud_essd",
        "tags": tags(checkpoint="oss://ali-ckpt/exp1/"),
    }
    inputs.update(changes)
    return inputs


def ali_checkpoint_bucket(name: str = "ali-ckpt") -> list[CapturedResource]:
    bucket = res(
        "alicloud:oss/bucket:Bucket",
        name,
        {"bucket": name, "versioning": {"status": "Enabled"}, "acl": "private",
         "lifecycleRules": [{"id": "expire", "enabled": True, "prefix": "exp1/", "expirations": [{"days": 30}]}],
         "serverSideEncryptionRule": {"sseAlgorithm": "AES256"}, "tags": tags(checkpoint="oss://ali-ckpt/exp1/",
                                                                              retain="true")},
        retain_on_delete=True,
    )
    return [
        bucket,
        res("alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock", f"{name}-pab",
            {"bucket": name, "blockPublicAccess": True}, property_dependencies={"bucket": [bucket.urn]}),
    ]


def compliant_ali_stack() -> list[CapturedResource]:
    return [res(ALI_INSTANCE, "gpu", ali_gpu()), *ali_checkpoint_bucket()]
