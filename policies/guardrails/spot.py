"""spot-only-with-checkpointing: GPU time is bought on spot, and spot work is checkpointed somewhere safe.

``spot-only-with-checkpointing`` (stack, mandatory): every compute unit that may run a GPU (an instance, a spot
request, an autoscaling group, a fleet, a node group or node pool, an ESS group: ``gpulease.core.compute``) runs
on spot, read from the form or the template it launches from (AWS ``instanceMarketOptions.marketType = spot``, a
spot request or spot fleet, a mixed-instances distribution with no on-demand share, EKS ``capacityType = SPOT``;
Alibaba ``spotStrategy`` other than ``NoSpot``, or an ESS / ACK distribution with no on-demand share), unless
config ``allowOnDemand`` is true or the unit carries a non-empty on-demand-reason tag; a spot unit carries a
checkpoint-uri tag naming a bucket (``s3://`` / ``oss://``).

``spot-checkpoint-bucket`` (stack, mandatory): that bucket is in the same stack with versioning enabled and a
lifecycle configuration (config ``externalBuckets`` names buckets managed elsewhere that are accepted as they
are).
"""

from __future__ import annotations

from pulumi_policy import ReportViolation, StackValidationArgs, StackValidationPolicy

from gpulease.core import vocabulary as v
from gpulease.core.compute import MIXED, ON_DEMAND, SPOT, UNKNOWN

from . import buckets
from . import common as c


def _spot_only(args: StackValidationArgs, report: ReportViolation) -> None:
    allowed = bool(c.config_value(args.get_config(), "allowOnDemand", False))
    for unit, resource in c.units(args.resources):
        if not unit.accelerated or unit.market.kind is UNKNOWN:
            continue
        tags = unit.tags
        if unit.market.kind in (ON_DEMAND, MIXED):
            reason = tags.get(v.TAG_ON_DEMAND_REASON)
            if allowed or reason is UNKNOWN or (isinstance(reason, str) and reason.strip()):
                continue
            what = c.display_unit(unit)
            how = unit.form.spot_how
            if unit.market.kind == MIXED:
                report(f"{what} runs part of its capacity on-demand ({unit.market.detail}); accepted: {how}, or a "
                       f"{v.TAG_ON_DEMAND_REASON} tag saying why it cannot run on spot", resource.urn)
            else:
                report(f"{what} is on-demand; accepted: {how}, or a {v.TAG_ON_DEMAND_REASON} tag saying why it "
                       "cannot run on spot", resource.urn)
            continue
        if unit.market.kind != SPOT:
            continue
        uri = tags.get(v.TAG_CHECKPOINT_URI)
        if uri is UNKNOWN:
            continue
        what = c.display(unit.resource.type, unit.resource.name)
        if uri is None or uri == v.NO_CHECKPOINTS:
            report(f"{what} runs on spot without a {v.TAG_CHECKPOINT_URI} tag naming its checkpoint bucket; an "
                   "interruption would lose the work", resource.urn)
        elif c.checkpoint_bucket(uri) is None:
            report(f"{what}: {v.TAG_CHECKPOINT_URI}={uri!r} is not s3://bucket/prefix or oss://bucket/prefix",
                   resource.urn)


spot_only_with_checkpointing = c.judges(StackValidationPolicy(
    name="spot-only-with-checkpointing",
    description="GPU instances run on spot (or say why not), and spot instances name their checkpoint bucket.",
    validate=_spot_only,
    enforcement_level=c.level("mandatory"),
    config_schema=c.schema(
        {
            "allowOnDemand": {"type": "boolean", "default": False,
                              "description": "Accept on-demand GPU instances without an on-demand-reason tag."},
        }
    ),
), c.UNIT_TYPES)


def _checkpoint_bucket(args: StackValidationArgs, report: ReportViolation) -> None:
    external = set(c.config_value(args.get_config(), "externalBuckets", []))
    facts = buckets.bucket_facts(args.resources)
    by_name = {f.name: f for f in facts if isinstance(f.name, str)}
    for unit, resource in c.units(args.resources):
        if not unit.accelerated or unit.market.kind != SPOT:
            continue
        parsed = c.checkpoint_bucket(unit.tags.get(v.TAG_CHECKPOINT_URI))
        if parsed is None:
            continue  # a missing or malformed tag is spot-only-with-checkpointing's finding
        _, name = parsed
        if name in external:
            continue
        what = c.display(unit.resource.type, unit.resource.name)
        bucket = by_name.get(name)
        if bucket is None:
            report(f"{what} checkpoints to bucket {name!r}, which is not in this stack; accepted: a versioned bucket "
                   "with lifecycle rules in the stack, or the name in this policy's externalBuckets", resource.urn)
            continue
        checks = (("versioning enabled", bucket.versioned), ("an enabled lifecycle rule", bucket.lifecycle))
        missing = [label for label, ok in checks if ok is False]
        if missing:
            report(f"{what} checkpoints to bucket {name!r}, which lacks {' and '.join(missing)}", resource.urn)


spot_checkpoint_bucket = c.judges(StackValidationPolicy(
    name="spot-checkpoint-bucket",
    description="A spot GPU instance's checkpoint bucket is in the stack, versioned, with lifecycle rules.",
    validate=_checkpoint_bucket,
    enforcement_level=c.level("mandatory"),
    config_schema=c.schema(
        {
            "externalBuckets": {"type": "array", "items": {"type": "string"}, "default": [],
                                "description": "Checkpoint buckets managed outside the stack, accepted as they are."},
        }
    ),
), (*c.UNIT_TYPES, *buckets.BUCKET_FACT_TYPES))

POLICIES = [spot_only_with_checkpointing, spot_checkpoint_bucket]
