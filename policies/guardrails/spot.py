"""spot-only-with-checkpointing: GPU time is bought on spot, and spot work is checkpointed somewhere safe.

``spot-only-with-checkpointing`` (resource, mandatory): a GPU instance runs on spot (AWS
``instanceMarketOptions.marketType = spot`` or a spot request; Alibaba ``spotStrategy`` other than ``NoSpot``)
unless config ``allowOnDemand`` is true or the instance carries a non-empty on-demand-reason tag; a spot GPU
instance carries a checkpoint-uri tag naming a bucket (``s3://`` / ``oss://``).

``spot-checkpoint-bucket`` (stack, mandatory): that bucket is in the same stack with versioning enabled and a
lifecycle configuration (config ``externalBuckets`` names buckets managed elsewhere that are accepted as they
are).
"""

from __future__ import annotations

from pulumi_policy import (
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from gpulease.core import resources as rt
from gpulease.core import vocabulary as v

from . import buckets
from . import common as c

GPU_INSTANCE_TYPES = (rt.AWS_INSTANCE, rt.AWS_SPOT_REQUEST, rt.AWS_LAUNCH_TEMPLATE, rt.ALI_INSTANCE)


def _spot_only(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in GPU_INSTANCE_TYPES or not c.is_gpu(args.props):
        return
    what = c.display(args.resource_type, args.name)
    tags = c.tags_of(args.props, args.provider)
    spot = c.is_spot(args.resource_type, args.props)
    if spot is None:
        return
    if not spot:
        reason = tags.get(v.TAG_ON_DEMAND_REASON)
        allowed = bool(c.config_value(args.get_config(), "allowOnDemand", False))
        if not allowed and reason is not c.UNKNOWN and not (isinstance(reason, str) and reason.strip()):
            how = "spotStrategy=SpotAsPriceGo" if args.resource_type == rt.ALI_INSTANCE else \
                "instance_market_options.market_type=spot"
            report(f"{what} ({c.known(args.props, 'instanceType')}) is on-demand; accepted: {how}, or a "
                   f"{v.TAG_ON_DEMAND_REASON} tag saying why it cannot run on spot")
        return
    uri = tags.get(v.TAG_CHECKPOINT_URI)
    if uri is c.UNKNOWN:
        return
    if uri is None or uri == v.NO_CHECKPOINTS:
        report(f"{what} runs on spot without a {v.TAG_CHECKPOINT_URI} tag naming its checkpoint bucket; an "
               "interruption would lose the work")
    elif c.checkpoint_bucket(uri) is None:
        report(f"{what}: {v.TAG_CHECKPOINT_URI}={uri!r} is not s3://bucket/prefix or oss://bucket/prefix")


spot_only_with_checkpointing = c.judges(ResourceValidationPolicy(
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
), GPU_INSTANCE_TYPES)


def _checkpoint_bucket(args: StackValidationArgs, report: ReportViolation) -> None:
    external = set(c.config_value(args.get_config(), "externalBuckets", []))
    facts = buckets.bucket_facts(args.resources)
    by_name = {f.name: f for f in facts if isinstance(f.name, str)}
    for inst in args.resources:
        if inst.resource_type not in GPU_INSTANCE_TYPES or not c.is_gpu(inst.props):
            continue
        if not c.is_spot(inst.resource_type, inst.props):
            continue
        parsed = c.checkpoint_bucket(c.tags_of(inst.props, inst.provider).get(v.TAG_CHECKPOINT_URI))
        if parsed is None:
            continue  # a missing or malformed tag is spot-only-with-checkpointing's finding
        _, name = parsed
        if name in external:
            continue
        what = c.display(inst.resource_type, inst.name)
        bucket = by_name.get(name)
        if bucket is None:
            report(f"{what} checkpoints to bucket {name!r}, which is not in this stack; accepted: a versioned bucket "
                   "with lifecycle rules in the stack, or the name in this policy's externalBuckets", inst.urn)
            continue
        checks = (("versioning enabled", bucket.versioned), ("an enabled lifecycle rule", bucket.lifecycle))
        missing = [label for label, ok in checks if ok is False]
        if missing:
            report(f"{what} checkpoints to bucket {name!r}, which lacks {' and '.join(missing)}", inst.urn)


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
), (*GPU_INSTANCE_TYPES, *buckets.BUCKET_FACT_TYPES))

POLICIES = [spot_only_with_checkpointing, spot_checkpoint_bucket]
